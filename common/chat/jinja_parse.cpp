// chat::Template's parser: the source cut into text and tags (with trim_blocks, lstrip_blocks
// and `-` whitespace control), each tag into tokens, and the tokens into jinja_ast.h nodes.

#include <cctype>

#include "common/chat/jinja.h"
#include "common/chat/jinja_ast.h"

namespace nanoserve::chat {
namespace {

constexpr int kMaxDepth = 128;  // nesting of expressions and blocks

[[noreturn]] void fail(int line, const std::string& what) {
  throw TemplateError("chat template line " + std::to_string(line) + ": " + what);
}

struct Segment {
  enum class Kind { kText, kOutput, kStatement } kind;
  std::string text;  // the text, or the tag's inside
  int line;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int line_at(const std::string& s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

// Where the tag opened at `open` ends (the index of its closing "}}", "%}" or "#}"), skipping
// quoted strings inside expression and statement tags.
size_t find_close(const std::string& src, size_t open, char kind) {
  const std::string close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
  if (kind == '#') return src.find(close, open + 2);
  char quote = 0;
  for (size_t i = open + 2; i + 1 < src.size(); ++i) {
    const char c = src[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (src.compare(i, 2, close) == 0) {
      return i;
    }
  }
  return std::string::npos;
}

std::vector<Segment> segment(std::string src) {
  if (!src.empty() && src.back() == '\n') src.pop_back();  // keep_trailing_newline=False
  std::vector<Segment> out;
  size_t pos = 0;
  bool strip_all = false, trim_newline = false;
  while (pos <= src.size()) {
    size_t at = pos;
    while ((at = src.find('{', at)) != std::string::npos) {
      if (at + 1 < src.size() && (src[at + 1] == '{' || src[at + 1] == '%' || src[at + 1] == '#')) break;
      ++at;
    }
    size_t start = pos;
    if (strip_all) {
      while (start < src.size() && is_space(src[start])) ++start;
    } else if (trim_newline) {
      if (src.compare(start, 2, "\r\n") == 0) start += 2;
      else if (start < src.size() && src[start] == '\n') ++start;
    }
    strip_all = trim_newline = false;
    const size_t text_end = at == std::string::npos ? src.size() : std::max(at, start);
    std::string text = start < text_end ? src.substr(start, text_end - start) : std::string();
    if (at == std::string::npos) {
      if (!text.empty()) out.push_back({Segment::Kind::kText, text, line_at(src, start)});
      break;
    }
    const char kind = src[at + 1];
    const char mod = at + 2 < src.size() ? src[at + 2] : 0;
    if (mod == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (kind != '{' && mod != '+') {
      // lstrip_blocks: spaces and tabs between the start of the line and a block tag go.
      size_t k = at;
      while (k > start && (src[k - 1] == ' ' || src[k - 1] == '\t')) --k;
      if (k == 0 || src[k - 1] == '\n') text.resize(text.size() - (at - k));
    }
    if (!text.empty()) out.push_back({Segment::Kind::kText, text, line_at(src, start)});
    const size_t close = find_close(src, at, kind);
    const int line = line_at(src, at);
    if (close == std::string::npos) fail(line, std::string("'{") + kind + "' is never closed");
    size_t inner_begin = at + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
    size_t inner_end = close;
    const bool close_strip = inner_end > inner_begin && src[inner_end - 1] == '-';
    const bool close_keep = inner_end > inner_begin && src[inner_end - 1] == '+';
    if (close_strip || close_keep) --inner_end;
    if (kind != '#') {
      out.push_back({kind == '{' ? Segment::Kind::kOutput : Segment::Kind::kStatement,
                     src.substr(inner_begin, inner_end - inner_begin), line});
    }
    strip_all = close_strip;
    trim_newline = !close_strip && !close_keep && kind != '{';  // trim_blocks
    pos = close + 2;
  }
  return out;
}

// ---- tokens of one tag ----

struct Token {
  enum class Kind { kName, kString, kInt, kFloat, kOp, kEnd } kind;
  std::string text;
};

std::vector<Token> lex(const std::string& s, int line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::kName, s.substr(i, j - i)});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      bool is_float = false;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      out.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInt, s.substr(i, j - i)});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          v += s[j];
          continue;
        }
        const char e = s[++j];
        switch (e) {
          case 'n': v += '\n'; break;
          case 't': v += '\t'; break;
          case 'r': v += '\r'; break;
          case '\\': v += '\\'; break;
          case '\'': v += '\''; break;
          case '"': v += '"'; break;
          default: v += '\\'; v += e;
        }
      }
      if (j >= s.size()) fail(line, "unterminated string");
      out.push_back({Token::Kind::kString, v});
      i = j + 1;
    } else {
      static const char* const kOps[] = {"==", "!=", "<=", ">=", "//", "**", "+", "-", "*", "/",
                                         "%", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}",
                                         ",", ".", ":", "|"};
      bool found = false;
      for (const char* op : kOps) {
        const size_t n = std::char_traits<char>::length(op);
        if (s.compare(i, n, op) == 0) {
          out.push_back({Token::Kind::kOp, op});
          i += n;
          found = true;
          break;
        }
      }
      if (!found) fail(line, std::string("unexpected character '") + c + "'");
    }
  }
  out.push_back({Token::Kind::kEnd, ""});
  return out;
}

// ---- expressions ----

class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, int line) : t_(std::move(tokens)), line_(line) {}

  ExprPtr expression() { return ternary(); }
  bool at_end() const { return t_[i_].kind == Token::Kind::kEnd; }
  bool peek_name(const char* n) const { return t_[i_].kind == Token::Kind::kName && t_[i_].text == n; }
  bool peek_op(const char* o) const { return t_[i_].kind == Token::Kind::kOp && t_[i_].text == o; }
  bool accept_name(const char* n) { return peek_name(n) ? (++i_, true) : false; }
  bool accept_op(const char* o) { return peek_op(o) ? (++i_, true) : false; }
  void expect_op(const char* o) {
    if (!accept_op(o)) fail(line_, std::string("expected '") + o + "', got '" + t_[i_].text + "'");
  }
  std::string name() {
    if (t_[i_].kind != Token::Kind::kName) fail(line_, "expected a name, got '" + t_[i_].text + "'");
    return t_[i_++].text;
  }
  void expect_end() {
    if (!at_end()) fail(line_, "unexpected '" + t_[i_].text + "'");
  }
  int line() const { return line_; }

 private:
  ExprPtr node(Expr::Kind k) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line_;
    return e;
  }
  struct DepthGuard {
    explicit DepthGuard(ExprParser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) fail(p.line_, "expression nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    ExprParser& p;
  };
  ExprPtr binary(Expr::Kind k, const std::string& op, ExprPtr a, ExprPtr b) {
    auto e = node(k);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }
  ExprPtr ternary() {
    DepthGuard g(*this);
    ExprPtr a = or_expr();
    if (!accept_name("if")) return a;
    auto e = node(Expr::Kind::kIf);
    e->args.push_back(std::move(a));
    e->args.push_back(or_expr());
    e->args.push_back(accept_name("else") ? ternary() : nullptr);
    return e;
  }
  ExprPtr or_expr() {
    ExprPtr a = and_expr();
    while (accept_name("or")) a = binary(Expr::Kind::kOr, "or", std::move(a), and_expr());
    return a;
  }
  ExprPtr and_expr() {
    ExprPtr a = not_expr();
    while (accept_name("and")) a = binary(Expr::Kind::kAnd, "and", std::move(a), not_expr());
    return a;
  }
  ExprPtr not_expr() {
    DepthGuard g(*this);
    if (accept_name("not")) {
      auto e = node(Expr::Kind::kNot);
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr a = concat();
    for (;;) {
      std::string op;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (accept_op(o)) {
          op = o;
          break;
        }
      }
      if (op.empty() && accept_name("in")) op = "in";
      if (op.empty() && peek_name("not") && t_[i_ + 1].kind == Token::Kind::kName &&
          t_[i_ + 1].text == "in") {
        i_ += 2;
        op = "not in";
      }
      if (op.empty()) return a;
      a = binary(Expr::Kind::kBinary, op, std::move(a), concat());
    }
  }
  ExprPtr concat() {
    ExprPtr a = sum();
    while (accept_op("~")) a = binary(Expr::Kind::kBinary, "~", std::move(a), sum());
    return a;
  }
  ExprPtr sum() {
    ExprPtr a = product();
    for (;;) {
      if (accept_op("+")) a = binary(Expr::Kind::kBinary, "+", std::move(a), product());
      else if (accept_op("-")) a = binary(Expr::Kind::kBinary, "-", std::move(a), product());
      else return a;
    }
  }
  ExprPtr product() {
    ExprPtr a = unary();
    for (;;) {
      std::string op;
      for (const char* o : {"//", "*", "/", "%"}) {
        if (accept_op(o)) {
          op = o;
          break;
        }
      }
      if (op.empty()) return a;
      a = binary(Expr::Kind::kBinary, op, std::move(a), unary());
    }
  }
  ExprPtr unary() {
    DepthGuard g(*this);
    if (accept_op("-")) {
      auto e = node(Expr::Kind::kNeg);
      e->args.push_back(unary());
      return e;
    }
    return filters(postfix(primary()));
  }
  void call_args(Expr& e) {  // after '('
    if (accept_op(")")) return;
    do {
      if (t_[i_].kind == Token::Kind::kName && t_[i_ + 1].kind == Token::Kind::kOp &&
          t_[i_ + 1].text == "=") {
        std::string key = t_[i_].text;
        i_ += 2;
        e.kwargs.emplace_back(std::move(key), expression());
      } else {
        e.args.push_back(expression());
      }
    } while (accept_op(","));
    expect_op(")");
  }
  ExprPtr postfix(ExprPtr a) {
    for (;;) {
      if (accept_op(".")) {
        auto e = node(Expr::Kind::kAttr);
        e->name = name();
        e->args.push_back(std::move(a));
        a = std::move(e);
      } else if (accept_op("[")) {
        ExprPtr parts[3];
        bool slice = false;
        if (!peek_op(":")) parts[0] = expression();
        for (int k = 1; k < 3 && accept_op(":"); ++k) {
          slice = true;
          if (!peek_op(":") && !peek_op("]")) parts[k] = expression();
        }
        expect_op("]");
        auto e = node(slice ? Expr::Kind::kSlice : Expr::Kind::kItem);
        e->args.push_back(std::move(a));
        for (int k = 0; k < (slice ? 3 : 1); ++k) e->args.push_back(std::move(parts[k]));
        if (!slice && !e->args[1]) fail(line_, "empty subscript");
        a = std::move(e);
      } else if (accept_op("(")) {
        auto e = node(Expr::Kind::kCall);
        e->args.push_back(std::move(a));
        call_args(*e);
        a = std::move(e);
      } else {
        return a;
      }
    }
  }
  ExprPtr filters(ExprPtr a) {
    for (;;) {
      if (accept_op("|")) {
        auto e = node(Expr::Kind::kFilter);
        e->name = name();
        e->args.push_back(std::move(a));
        if (accept_op("(")) call_args(*e);
        a = std::move(e);
      } else if (accept_name("is")) {
        auto e = node(Expr::Kind::kTest);
        e->negated = accept_name("not");
        e->name = name();
        e->args.push_back(std::move(a));
        if (accept_op("(")) {
          call_args(*e);
        } else if (t_[i_].kind == Token::Kind::kString || t_[i_].kind == Token::Kind::kInt ||
                   t_[i_].kind == Token::Kind::kFloat) {
          e->args.push_back(primary());  // `is equalto 3`, `is divisibleby 2`
        }
        a = std::move(e);
      } else {
        return a;
      }
    }
  }
  ExprPtr primary() {
    DepthGuard g(*this);
    const Token tok = t_[i_];
    if (tok.kind == Token::Kind::kEnd) fail(line_, "expression ends early");
    ++i_;
    if (tok.kind == Token::Kind::kString) {
      auto e = node(Expr::Kind::kLiteral);
      std::string s = tok.text;
      while (t_[i_].kind == Token::Kind::kString) s += t_[i_++].text;  // 'a' 'b' is 'ab'
      e->value = Value::string(std::move(s));
      return e;
    }
    if (tok.kind == Token::Kind::kInt || tok.kind == Token::Kind::kFloat) {
      auto e = node(Expr::Kind::kLiteral);
      try {
        e->value = tok.kind == Token::Kind::kInt ? Value::integer(std::stoll(tok.text))
                                                  : Value::number(std::stod(tok.text));
      } catch (const std::exception&) {
        fail(line_, "number '" + tok.text + "' is out of range");
      }
      return e;
    }
    if (tok.kind == Token::Kind::kName) {
      auto e = node(Expr::Kind::kLiteral);
      if (tok.text == "true" || tok.text == "True") e->value = Value::boolean(true);
      else if (tok.text == "false" || tok.text == "False") e->value = Value::boolean(false);
      else if (tok.text == "none" || tok.text == "None") e->value = Value::none();
      else {
        e->kind = Expr::Kind::kName;
        e->name = tok.text;
      }
      return e;
    }
    if (tok.text == "(") {
      ExprPtr e = expression();
      expect_op(")");
      return e;
    }
    if (tok.text == "[") {
      auto e = node(Expr::Kind::kList);
      if (!accept_op("]")) {
        do {
          if (peek_op("]")) break;  // trailing comma
          e->args.push_back(expression());
        } while (accept_op(","));
        expect_op("]");
      }
      return e;
    }
    if (tok.text == "{") {
      auto e = node(Expr::Kind::kDict);
      if (!accept_op("}")) {
        do {
          if (peek_op("}")) break;
          e->args.push_back(expression());
          expect_op(":");
          e->args.push_back(expression());
        } while (accept_op(","));
        expect_op("}");
      }
      return e;
    }
    fail(line_, "unexpected '" + tok.text + "'");
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int line_;
  int depth_ = 0;
};

// ---- statements ----

class BlockParser {
 public:
  explicit BlockParser(std::vector<Segment> segs) : s_(std::move(segs)) {}

  std::unique_ptr<TemplateNode> parse_all() {
    std::string end;
    auto body = parse_body({}, end);
    if (!end.empty()) fail(line_, "'" + end + "' without an opening block");
    return body;
  }

 private:
  // Parses until a statement whose keyword is in `stops`; `stop` receives it ("" at the end),
  // and `stop_parser` holds the rest of that tag.
  std::unique_ptr<TemplateNode> parse_body(const std::vector<std::string>& stops, std::string& stop) {
    if (++depth_ > kMaxDepth) fail(line_, "blocks nested too deeply");
    auto body = std::make_unique<TemplateNode>();
    body->kind = TemplateNode::Kind::kBody;
    stop.clear();
    while (k_ < s_.size()) {
      const Segment& seg = s_[k_++];
      line_ = seg.line;
      if (seg.kind == Segment::Kind::kText) {
        auto n = std::make_unique<TemplateNode>();
        n->kind = TemplateNode::Kind::kText;
        n->text = seg.text;
        body->children.push_back(std::move(n));
        continue;
      }
      auto p = std::make_unique<ExprParser>(lex(seg.text, seg.line), seg.line);
      if (seg.kind == Segment::Kind::kOutput) {
        auto n = std::make_unique<TemplateNode>();
        n->kind = TemplateNode::Kind::kOutput;
        n->line = seg.line;
        n->expr = p->expression();
        p->expect_end();
        body->children.push_back(std::move(n));
        continue;
      }
      const std::string keyword = p->name();
      for (const std::string& s : stops) {
        if (keyword == s) {
          stop = keyword;
          stop_parser_ = std::move(p);
          --depth_;
          return body;
        }
      }
      if (keyword == "if") {
        body->children.push_back(parse_if(*p));
      } else if (keyword == "for") {
        body->children.push_back(parse_for(*p));
      } else if (keyword == "set") {
        body->children.push_back(parse_set(*p));
      } else {
        fail(seg.line, "'{% " + keyword + " %}' is not supported here (if, for, set)");
      }
    }
    if (!stops.empty()) fail(line_, "missing '{% " + stops.back() + " %}'");
    --depth_;
    return body;
  }

  std::unique_ptr<TemplateNode> parse_if(ExprParser& p) {
    auto n = std::make_unique<TemplateNode>();
    n->kind = TemplateNode::Kind::kIf;
    n->line = p.line();
    n->conditions.push_back(p.expression());
    p.expect_end();
    for (;;) {
      std::string stop;
      n->bodies.push_back(parse_body({"elif", "else", "endif"}, stop));
      if (stop == "endif") {
        stop_parser_->expect_end();
        return n;
      }
      if (stop == "elif") {
        n->conditions.push_back(stop_parser_->expression());
        stop_parser_->expect_end();
        continue;
      }
      stop_parser_->expect_end();  // else
      n->bodies.push_back(parse_body({"endif"}, stop));
      stop_parser_->expect_end();
      return n;
    }
  }

  std::unique_ptr<TemplateNode> parse_for(ExprParser& p) {
    auto n = std::make_unique<TemplateNode>();
    n->kind = TemplateNode::Kind::kFor;
    n->line = p.line();
    n->targets.push_back(p.name());
    while (p.accept_op(",")) n->targets.push_back(p.name());
    if (n->targets.size() > 2) fail(p.line(), "at most two loop variables");
    if (!p.accept_name("in")) fail(p.line(), "expected 'in' in the for loop");
    n->expr = p.expression();
    // `for x in xs if cond`: ExprParser read `xs if cond` as a conditional without else.
    if (n->expr->kind == Expr::Kind::kIf && !n->expr->args[2]) {
      n->filter = std::move(n->expr->args[1]);
      n->expr = std::move(n->expr->args[0]);
    }
    p.expect_end();
    std::string stop;
    n->body = parse_body({"else", "endfor"}, stop);
    stop_parser_->expect_end();
    if (stop == "else") {
      n->else_body = parse_body({"endfor"}, stop);
      stop_parser_->expect_end();
    }
    return n;
  }

  std::unique_ptr<TemplateNode> parse_set(ExprParser& p) {
    auto n = std::make_unique<TemplateNode>();
    n->kind = TemplateNode::Kind::kSet;
    n->line = p.line();
    n->targets.push_back(p.name());
    if (p.accept_op(".")) n->attr = p.name();
    p.expect_op("=");
    n->expr = p.expression();
    p.expect_end();
    return n;
  }

  std::vector<Segment> s_;
  size_t k_ = 0;
  int line_ = 1;
  int depth_ = 0;
  std::unique_ptr<ExprParser> stop_parser_;
};

}  // namespace

Template::Template(const std::string& source) : root_(BlockParser(segment(source)).parse_all()) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

}  // namespace nanoserve::chat
