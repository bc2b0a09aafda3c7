// chat::Template's evaluator: expressions to Values, statements to output, with the filters,
// tests, methods and globals chat templates call.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <unordered_map>

#include "common/chat/jinja.h"
#include "common/chat/jinja_ast.h"

namespace nanoserve::chat {
namespace {

using Kind = Value::Type;

[[noreturn]] void fail(int line, const std::string& what) {
  throw TemplateError("chat template line " + std::to_string(line) + ": " + what);
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string strip(const std::string& s, bool left, bool right, const std::string* chars = nullptr) {
  auto drop = [&](char c) { return chars ? chars->find(c) != std::string::npos : is_ws(c); };
  size_t b = 0, e = s.size();
  if (left) while (b < e && drop(s[b])) ++b;
  if (right) while (e > b && drop(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = s.find(from, pos)) != std::string::npos; pos = at + from.size()) {
    out.append(s, pos, at - pos).append(to);
  }
  return out.append(s, pos, std::string::npos);
}

int64_t length_of(const Value& v, int line) {
  switch (v.type()) {
    case Kind::kString: return int64_t(v.as_string().size());
    case Kind::kList: return int64_t(v.as_list().size());
    case Kind::kDict: return int64_t(v.as_dict().size());
    default: fail(line, std::string("length of a ") + v.type_name());
  }
}

// The items a `for` or a filter iterates: a list's items, a dict's keys, a string's bytes.
std::vector<Value> items_of(const Value& v, int line) {
  switch (v.type()) {
    case Kind::kList: return v.as_list();
    case Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& kv : v.as_dict()) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      for (char c : v.as_string()) chars.push_back(Value::string(std::string(1, c)));
      return chars;
    }
    case Kind::kUndefined:
    case Kind::kNone: return {};
    default: fail(line, std::string("a ") + v.type_name() + " is not iterable");
  }
}

int64_t index_in(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

class Renderer {
 public:
  explicit Renderer(const Value& context) {
    scopes_.emplace_back();
    if (context.type() == Kind::kDict) {
      for (const auto& [k, v] : context.as_dict()) scopes_.back()[k] = v;
    }
    globals();
  }

  void render(const TemplateNode& n) {
    switch (n.kind) {
      case TemplateNode::Kind::kBody:
        for (const auto& c : n.children) render(*c);
        break;
      case TemplateNode::Kind::kText: emit(n.text, n.line); break;
      case TemplateNode::Kind::kOutput: emit(eval(*n.expr).to_output(), n.line); break;
      case TemplateNode::Kind::kIf:
        for (size_t i = 0; i < n.bodies.size(); ++i) {
          if (i == n.conditions.size() || eval(*n.conditions[i]).truthy()) {
            render(*n.bodies[i]);
            break;
          }
        }
        break;
      case TemplateNode::Kind::kSet: {
        Value v = eval(*n.expr);
        if (n.attr.empty()) {
          scopes_.back()[n.targets[0]] = std::move(v);
        } else {
          const Value target = lookup(n.targets[0]);
          if (target.type() != Kind::kDict) fail(n.line, "cannot set ." + n.attr + " on a " + target.type_name());
          target.set(n.attr, std::move(v));
        }
        break;
      }
      case TemplateNode::Kind::kFor: render_for(n); break;
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void emit(const std::string& s, int line) {
    out_ += s;
    if (out_.size() > Template::kMaxOutputBytes) {
      fail(line, "the output exceeds " + std::to_string(Template::kMaxOutputBytes) + " bytes");
    }
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      const auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return Value();
  }

  void render_for(const TemplateNode& n) {
    std::vector<Value> items;
    const Value seq = eval(*n.expr);
    if (n.targets.size() == 2 && seq.type() == Kind::kDict) {  // for k, v in d (d.items())
      for (const auto& [k, v] : seq.as_dict()) items.push_back(Value::list({Value::string(k), v}));
    } else {
      items = items_of(seq, n.line);
    }
    if (n.filter) {
      std::vector<Value> kept;
      for (const Value& item : items) {
        scopes_.emplace_back();
        bind(n, item);
        if (eval(*n.filter).truthy()) kept.push_back(item);
        scopes_.pop_back();
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.else_body) render(*n.else_body);
      return;
    }
    const auto len = int64_t(items.size());
    for (int64_t i = 0; i < len; ++i) {
      if (++iterations_ > Template::kMaxIterations) {
        fail(n.line, "more than " + std::to_string(Template::kMaxIterations) + " loop iterations");
      }
      scopes_.emplace_back();
      bind(n, items[size_t(i)]);
      Value loop = Value::dict({{"index", Value::integer(i + 1)},
                                {"index0", Value::integer(i)},
                                {"revindex", Value::integer(len - i)},
                                {"revindex0", Value::integer(len - i - 1)},
                                {"first", Value::boolean(i == 0)},
                                {"last", Value::boolean(i == len - 1)},
                                {"length", Value::integer(len)},
                                {"previtem", i > 0 ? items[size_t(i - 1)] : Value()},
                                {"nextitem", i + 1 < len ? items[size_t(i + 1)] : Value()}});
      scopes_.back()["loop"] = loop;
      render(*n.body);
      scopes_.pop_back();
    }
  }

  void bind(const TemplateNode& n, const Value& item) {
    if (n.targets.size() == 1) {
      scopes_.back()[n.targets[0]] = item;
      return;
    }
    if (item.type() != Kind::kList || item.as_list().size() != 2) {
      fail(n.line, "cannot unpack a " + std::string(item.type_name()) + " into two loop variables");
    }
    scopes_.back()[n.targets[0]] = item.as_list()[0];
    scopes_.back()[n.targets[1]] = item.as_list()[1];
  }

  void globals() {
    auto& g = scopes_.front();
    if (!g.count("raise_exception")) {
      g["raise_exception"] = Value::function([](const std::vector<Value>& a, const Kwargs&) -> Value {
        throw TemplateError(a.empty() ? "raise_exception" : a[0].to_output());
      });
    }
    g["range"] = Value::function([](const std::vector<Value>& a, const Kwargs&) {
      int64_t start = 0, stop = 0, step = 1;
      if (a.size() == 1) stop = a[0].as_int();
      if (a.size() >= 2) start = a[0].as_int(), stop = a[1].as_int();
      if (a.size() == 3) step = a[2].as_int();
      if (a.empty() || a.size() > 3 || step == 0) throw TemplateError("range(): bad arguments");
      Value::List out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (out.size() >= size_t(Template::kMaxIterations)) throw TemplateError("range(): too long");
        out.push_back(Value::integer(i));
      }
      return Value::list(std::move(out));
    });
    g["namespace"] = Value::function([](const std::vector<Value>&, const Kwargs& kw) {
      Value::Dict d(kw.begin(), kw.end());
      return Value::dict(std::move(d));
    });
    g["strftime_now"] = Value::function([](const std::vector<Value>& a, const Kwargs&) {
      const std::time_t now = std::time(nullptr);
      std::tm tm{};
      localtime_r(&now, &tm);
      char buf[256];
      const std::string fmt = a.empty() ? "%Y-%m-%d" : a[0].to_output();
      const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
      return Value::string(std::string(buf, n));
    });
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return lookup(e.name);
      case Expr::Kind::kAttr: {
        const Value obj = eval(*e.args[0]);
        // Jinja tries the attribute (a dict's methods) before the item.
        if (obj.type() == Kind::kDict && e.name != "items" && e.name != "keys" &&
            e.name != "values" && e.name != "get") {
          return obj.get(e.name);
        }
        return method(obj, e.name, e.line);  // a bound method, called by kCall
      }
      case Expr::Kind::kItem: return item(eval(*e.args[0]), eval(*e.args[1]), e.line);
      case Expr::Kind::kSlice: return slice(e);
      case Expr::Kind::kCall: {
        const Value f = eval(*e.args[0]);
        std::vector<Value> args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
        Kwargs kw;
        for (const auto& [k, x] : e.kwargs) kw.emplace_back(k, eval(*x));
        if (f.type() != Kind::kFunction) fail(e.line, std::string("a ") + f.type_name() + " is not callable");
        try {
          return f.as_function()(args, kw);
        } catch (const TemplateError&) {
          throw;
        } catch (const std::exception& x) {
          fail(e.line, x.what());
        }
      }
      case Expr::Kind::kFilter: return filter(e);
      case Expr::Kind::kTest: {
        const bool r = test(e);
        return Value::boolean(e.negated ? !r : r);
      }
      case Expr::Kind::kNot: return Value::boolean(!eval(*e.args[0]).truthy());
      case Expr::Kind::kNeg: {
        const Value v = eval(*e.args[0]);
        if (v.type() == Kind::kInt) return Value::integer(-v.as_int());
        if (v.type() == Kind::kFloat) return Value::number(-v.as_double());
        fail(e.line, std::string("cannot negate a ") + v.type_name());
      }
      case Expr::Kind::kAnd: {
        Value a = eval(*e.args[0]);
        return a.truthy() ? eval(*e.args[1]) : a;
      }
      case Expr::Kind::kOr: {
        Value a = eval(*e.args[0]);
        return a.truthy() ? a : eval(*e.args[1]);
      }
      case Expr::Kind::kIf:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value();
      case Expr::Kind::kList: {
        Value::List items;
        for (const auto& x : e.args) items.push_back(eval(*x));
        return Value::list(std::move(items));
      }
      case Expr::Kind::kDict: {
        Value::Dict d;
        Value out = Value::dict();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          out.set(eval(*e.args[i]).to_output(), eval(*e.args[i + 1]));
        }
        return out;
      }
      case Expr::Kind::kBinary: return binary(e);
    }
    fail(e.line, "unknown expression");
  }

  Value item(const Value& obj, const Value& key, int line) {
    if (obj.type() == Kind::kDict) return obj.get(key.to_output());
    if ((obj.type() == Kind::kList || obj.type() == Kind::kString) && key.type() == Kind::kInt) {
      const int64_t n = obj.type() == Kind::kList ? int64_t(obj.as_list().size())
                                                  : int64_t(obj.as_string().size());
      const int64_t i = index_in(key.as_int(), n);
      if (i < 0 || i >= n) return Value();  // undefined, as jinja's getitem
      return obj.type() == Kind::kList ? obj.as_list()[size_t(i)]
                                       : Value::string(std::string(1, obj.as_string()[size_t(i)]));
    }
    if (obj.type() == Kind::kUndefined || obj.type() == Kind::kNone) return Value();
    if (key.type() == Kind::kString) return method(obj, key.as_string(), line);
    fail(line, std::string("cannot index a ") + obj.type_name() + " with a " + key.type_name());
  }

  Value slice(const Expr& e) {
    const Value obj = eval(*e.args[0]);
    const bool is_list = obj.type() == Kind::kList;
    if (!is_list && obj.type() != Kind::kString) fail(e.line, std::string("cannot slice a ") + obj.type_name());
    const int64_t n = is_list ? int64_t(obj.as_list().size()) : int64_t(obj.as_string().size());
    const int64_t step = e.args[3] ? eval(*e.args[3]).as_int() : 1;
    if (step == 0) fail(e.line, "slice step 0");
    auto bound = [&](const ExprPtr& x, int64_t dflt) {
      if (!x) return dflt;
      int64_t i = index_in(eval(*x).as_int(), n);
      return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
    };
    const int64_t start = bound(e.args[1], step > 0 ? 0 : n - 1);
    const int64_t stop = bound(e.args[2], step > 0 ? n : -1);
    Value::List items;
    std::string s;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (is_list) items.push_back(obj.as_list()[size_t(i)]);
      else s += obj.as_string()[size_t(i)];
    }
    return is_list ? Value::list(std::move(items)) : Value::string(std::move(s));
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    const Value a = eval(*e.args[0]);
    const Value b = eval(*e.args[1]);
    if (op == "==") return Value::boolean(a == b);
    if (op == "!=") return Value::boolean(!(a == b));
    if (op == "~") return Value::string(a.to_output() + b.to_output());
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.type() == Kind::kString) found = b.as_string().find(a.to_output()) != std::string::npos;
      else if (b.type() == Kind::kList) found = std::find(b.as_list().begin(), b.as_list().end(), a) != b.as_list().end();
      else if (b.type() == Kind::kDict) found = b.get(a.to_output()).is_defined();
      else if (b.is_defined() && b.type() != Kind::kNone) fail(e.line, std::string("'in' a ") + b.type_name());
      return Value::boolean(op == "in" ? found : !found);
    }
    if (op == "+" && a.type() == Kind::kString && b.type() == Kind::kString) {
      return Value::string(a.as_string() + b.as_string());
    }
    if (op == "+" && a.type() == Kind::kList && b.type() == Kind::kList) {
      Value::List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(items));
    }
    if (op == "*" && a.type() == Kind::kString && b.type() == Kind::kInt) {
      std::string s;
      for (int64_t i = 0; i < b.as_int() && s.size() < Template::kMaxOutputBytes; ++i) s += a.as_string();
      return Value::string(std::move(s));
    }
    const bool nums = (a.is_number() || a.type() == Kind::kBool) && (b.is_number() || b.type() == Kind::kBool);
    if ((op == "<" || op == ">" || op == "<=" || op == ">=") && a.type() == Kind::kString &&
        b.type() == Kind::kString) {
      const int c = a.as_string().compare(b.as_string());
      return Value::boolean(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
    }
    if (!nums) {
      fail(e.line, "'" + op + "' between a " + a.type_name() + " and a " + b.type_name());
    }
    const bool ints = a.type() != Kind::kFloat && b.type() != Kind::kFloat;
    const double x = a.as_double(), y = b.as_double();
    if (op == "<") return Value::boolean(x < y);
    if (op == ">") return Value::boolean(x > y);
    if (op == "<=") return Value::boolean(x <= y);
    if (op == ">=") return Value::boolean(x >= y);
    if (op == "/") {
      if (y == 0) fail(e.line, "division by zero");
      return Value::number(x / y);
    }
    if (ints) {
      const int64_t i = a.as_int(), j = b.as_int();
      if (op == "+") return Value::integer(i + j);
      if (op == "-") return Value::integer(i - j);
      if (op == "*") return Value::integer(i * j);
      if (j == 0) fail(e.line, "division by zero");
      const int64_t q = i / j - ((i % j != 0) && ((i < 0) != (j < 0)));  // floor, as Python
      if (op == "//") return Value::integer(q);
      if (op == "%") return Value::integer(i - q * j);
    }
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (y == 0) fail(e.line, "division by zero");
    if (op == "//") return Value::number(std::floor(x / y));
    if (op == "%") return Value::number(x - std::floor(x / y) * y);
    fail(e.line, "unknown operator " + op);
  }

  // `obj.name` for a string or dict method, as a function bound to obj.
  Value method(const Value& obj, const std::string& name, int line) {
    if (obj.type() == Kind::kString) {
      const std::string s = obj.as_string();
      auto fn = [&](auto f) { return Value::function(f); };
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const bool l = name != "rstrip", r = name != "lstrip";
        return fn([s, l, r](const std::vector<Value>& a, const Kwargs&) {
          if (!a.empty() && a[0].type() == Kind::kString) return Value::string(strip(s, l, r, &a[0].as_string()));
          return Value::string(strip(s, l, r));
        });
      }
      if (name == "upper") return fn([s](const std::vector<Value>&, const Kwargs&) { return Value::string(upper(s)); });
      if (name == "lower") return fn([s](const std::vector<Value>&, const Kwargs&) { return Value::string(lower(s)); });
      if (name == "title" || name == "capitalize") {
        const bool title = name == "title";
        return fn([s, title](const std::vector<Value>&, const Kwargs&) {
          std::string out = lower(s);
          bool start = true;
          for (char& c : out) {
            if (start && std::isalpha(static_cast<unsigned char>(c))) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            start = title ? !std::isalpha(static_cast<unsigned char>(c)) : false;
          }
          return Value::string(out);
        });
      }
      if (name == "startswith" || name == "endswith") {
        const bool starts = name == "startswith";
        return fn([s, starts](const std::vector<Value>& a, const Kwargs&) {
          if (a.empty()) throw TemplateError("startswith/endswith need an argument");
          const std::string p = a[0].to_output();
          const bool r = s.size() >= p.size() &&
                         (starts ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
          return Value::boolean(r);
        });
      }
      if (name == "split") {
        return fn([s](const std::vector<Value>& a, const Kwargs&) {
          Value::List parts;
          if (a.empty() || a[0].type() == Kind::kNone) {
            size_t i = 0;
            while (i < s.size()) {
              while (i < s.size() && is_ws(s[i])) ++i;
              size_t j = i;
              while (j < s.size() && !is_ws(s[j])) ++j;
              if (j > i) parts.push_back(Value::string(s.substr(i, j - i)));
              i = j;
            }
          } else {
            const std::string sep = a[0].to_output();
            if (sep.empty()) throw TemplateError("split(): empty separator");
            int64_t max = a.size() > 1 ? a[1].as_int() : -1;
            size_t pos = 0;
            for (size_t at; max != 0 && (at = s.find(sep, pos)) != std::string::npos; pos = at + sep.size(), --max) {
              parts.push_back(Value::string(s.substr(pos, at - pos)));
            }
            parts.push_back(Value::string(s.substr(pos)));
          }
          return Value::list(std::move(parts));
        });
      }
      if (name == "replace") {
        return fn([s](const std::vector<Value>& a, const Kwargs&) {
          if (a.size() < 2) throw TemplateError("replace() needs two arguments");
          return Value::string(replace_all(s, a[0].to_output(), a[1].to_output()));
        });
      }
      if (name == "join") {
        return fn([s](const std::vector<Value>& a, const Kwargs&) {
          std::string out;
          if (!a.empty() && a[0].type() == Kind::kList) {
            bool first = true;
            for (const Value& v : a[0].as_list()) {
              out += (first ? "" : s) + v.to_output();
              first = false;
            }
          }
          return Value::string(out);
        });
      }
    }
    if (obj.type() == Kind::kDict) {
      if (name == "items" || name == "keys" || name == "values") {
        return Value::function([obj, name](const std::vector<Value>&, const Kwargs&) {
          Value::List out;
          for (const auto& [k, v] : obj.as_dict()) {
            if (name == "items") out.push_back(Value::list({Value::string(k), v}));
            else out.push_back(name == "keys" ? Value::string(k) : v);
          }
          return Value::list(std::move(out));
        });
      }
      if (name == "get") {
        return Value::function([obj](const std::vector<Value>& a, const Kwargs&) {
          if (a.empty()) throw TemplateError("get() needs a key");
          const Value v = obj.get(a[0].to_output());
          return v.is_defined() ? v : (a.size() > 1 ? a[1] : Value::none());
        });
      }
    }
    if (obj.type() == Kind::kUndefined || obj.type() == Kind::kNone) return Value();
    (void)line;
    return Value();  // an unknown attribute is undefined, as in jinja
  }

  Value filter(const Expr& e) {
    const Value v = eval(*e.args[0]);
    std::vector<Value> a;
    for (size_t i = 1; i < e.args.size(); ++i) a.push_back(eval(*e.args[i]));
    auto kwarg = [&](const char* key) -> Value {
      for (const auto& [k, x] : e.kwargs) {
        if (k == key) return eval(*x);
      }
      return Value();
    };
    const std::string& f = e.name;
    if (f == "trim") return Value::string(strip(v.to_output(), true, true));
    if (f == "upper") return Value::string(upper(v.to_output()));
    if (f == "lower") return Value::string(lower(v.to_output()));
    if (f == "string") return Value::string(v.to_output());
    if (f == "safe" || f == "e" || f == "escape") return v;
    if (f == "length" || f == "count") return Value::integer(length_of(v, e.line));
    if (f == "tojson") {
      Value indent = a.empty() ? kwarg("indent") : a[0];
      return Value::string(v.to_json(indent.type() == Kind::kInt ? int(indent.as_int()) : -1));
    }
    if (f == "default" || f == "d") {
      const bool boolean = a.size() > 1 ? a[1].truthy() : kwarg("boolean").truthy();
      if (!v.is_defined() || (boolean && !v.truthy())) return a.empty() ? Value::string("") : a[0];
      return v;
    }
    if (f == "first" || f == "last") {
      const std::vector<Value> items = items_of(v, e.line);
      if (items.empty()) return Value();
      return f == "first" ? items.front() : items.back();
    }
    if (f == "list") return Value::list(items_of(v, e.line));
    if (f == "join") {
      const std::string sep = a.empty() ? "" : a[0].to_output();
      std::string out;
      bool first = true;
      for (const Value& x : items_of(v, e.line)) {
        out += (first ? "" : sep) + x.to_output();
        first = false;
      }
      return Value::string(out);
    }
    if (f == "replace") {
      if (a.size() < 2) fail(e.line, "replace needs two arguments");
      return Value::string(replace_all(v.to_output(), a[0].to_output(), a[1].to_output()));
    }
    if (f == "capitalize" || f == "title") return method(Value::string(v.to_output()), f, e.line).as_function()({}, {});
    if (f == "int") {
      if (v.is_number() || v.type() == Kind::kBool) return Value::integer(int64_t(v.as_double()));
      try {
        return Value::integer(std::stoll(v.to_output()));
      } catch (const std::exception&) {
        return Value::integer(0);
      }
    }
    if (f == "float") {
      if (v.is_number()) return Value::number(v.as_double());
      try {
        return Value::number(std::stod(v.to_output()));
      } catch (const std::exception&) {
        return Value::number(0);
      }
    }
    if (f == "abs" && v.is_number()) {
      return v.type() == Kind::kInt ? Value::integer(std::llabs(v.as_int())) : Value::number(std::fabs(v.as_double()));
    }
    if (f == "items" && v.type() == Kind::kDict) return method(v, "items", e.line).as_function()({}, {});
    if (f == "reverse") {
      if (v.type() == Kind::kString) return Value::string(std::string(v.as_string().rbegin(), v.as_string().rend()));
      std::vector<Value> items = items_of(v, e.line);
      std::reverse(items.begin(), items.end());
      return Value::list(std::move(items));
    }
    fail(e.line, "filter '" + f + "' is not supported");
  }

  bool test(const Expr& e) {
    const Value v = eval(*e.args[0]);
    const std::string& t = e.name;
    if (t == "defined") return v.is_defined();
    if (t == "undefined") return !v.is_defined();
    if (t == "none") return v.type() == Kind::kNone;
    if (t == "string") return v.type() == Kind::kString;
    if (t == "number") return v.is_number();
    if (t == "integer") return v.type() == Kind::kInt;
    if (t == "float") return v.type() == Kind::kFloat;
    if (t == "boolean") return v.type() == Kind::kBool;
    if (t == "true") return v.type() == Kind::kBool && v.as_bool();
    if (t == "false") return v.type() == Kind::kBool && !v.as_bool();
    if (t == "mapping") return v.type() == Kind::kDict;
    if (t == "sequence" || t == "iterable") {
      return v.type() == Kind::kList || v.type() == Kind::kString || v.type() == Kind::kDict;
    }
    if (t == "callable") return v.type() == Kind::kFunction;
    if (t == "odd" || t == "even") {
      if (v.type() != Kind::kInt) fail(e.line, "'" + t + "' of a " + v.type_name());
      return (v.as_int() % 2 != 0) == (t == "odd");
    }
    if (t == "divisibleby" && e.args.size() == 2) {
      const int64_t d = eval(*e.args[1]).as_int();
      if (d == 0) fail(e.line, "divisibleby 0");
      return v.as_int() % d == 0;
    }
    if ((t == "equalto" || t == "eq" || t == "sameas") && e.args.size() == 2) return v == eval(*e.args[1]);
    fail(e.line, "test '" + t + "' is not supported");
  }

  std::vector<std::unordered_map<std::string, Value>> scopes_;
  std::string out_;
  long iterations_ = 0;
};

}  // namespace

std::string Template::render(const Value& context) const {
  Renderer r(context);
  r.render(*root_);
  return r.take();
}

}  // namespace nanoserve::chat
