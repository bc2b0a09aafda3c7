#include "common/chat/jinja_value.h"

#include <cmath>
#include <cstdio>

namespace nanoserve::chat {

Value Value::boolean(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.type_ = Type::kInt;
  v.i_ = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.type_ = Type::kFloat;
  v.d_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.type_ = Type::kString;
  v.s_ = std::move(s);
  return v;
}
Value Value::none() {
  Value v;
  v.type_ = Type::kNone;
  return v;
}
Value Value::list(List items) {
  Value v;
  v.type_ = Type::kList;
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::dict(Dict entries) {
  Value v;
  v.type_ = Type::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(entries));
  return v;
}
Value Value::function(Function f) {
  Value v;
  v.type_ = Type::kFunction;
  v.fn_ = std::make_shared<Function>(std::move(f));
  return v;
}

Value Value::from_json(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return none();
    case nlohmann::json::value_t::boolean: return boolean(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return integer(j.get<int64_t>());
    case nlohmann::json::value_t::number_float: return number(j.get<double>());
    case nlohmann::json::value_t::string: return string(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      List items;
      for (const auto& x : j) items.push_back(from_json(x));
      return list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (const auto& [k, x] : j.items()) d.emplace_back(k, from_json(x));
      return dict(std::move(d));
    }
    default: return Value();
  }
}

bool Value::truthy() const {
  switch (type_) {
    case Type::kBool: return b_;
    case Type::kInt: return i_ != 0;
    case Type::kFloat: return d_ != 0;
    case Type::kString: return !s_.empty();
    case Type::kList: return !list_->empty();
    case Type::kDict: return !dict_->empty();
    case Type::kFunction: return true;
    default: return false;
  }
}

Value Value::get(const std::string& key) const {
  for (const auto& [k, v] : *dict_) {
    if (k == key) return v;
  }
  return Value();
}

void Value::set(const std::string& key, Value v) const {
  for (auto& [k, x] : *dict_) {
    if (k == key) {
      x = std::move(v);
      return;
    }
  }
  dict_->emplace_back(key, std::move(v));
}

namespace {

std::string float_text(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  // Python prints the shortest text that reads back the same.
  for (int p = 1; p <= 17; ++p) {
    char t[32];
    std::snprintf(t, sizeof t, "%.*g", p, d);
    if (std::strtod(t, nullptr) == d) {
      std::snprintf(buf, sizeof buf, "%s", t);
      break;
    }
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_of(const Value& v, int indent, int depth, std::string& out) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(size_t(indent) * size_t(d), ' ');
  };
  switch (v.type()) {
    case Value::Type::kNone:
    case Value::Type::kUndefined: out += "null"; break;
    case Value::Type::kBool: out += v.as_bool() ? "true" : "false"; break;
    case Value::Type::kInt: out += std::to_string(v.as_int()); break;
    case Value::Type::kFloat: out += float_text(v.as_double()); break;
    case Value::Type::kString: json_string(v.as_string(), out); break;
    case Value::Type::kList: {
      if (v.as_list().empty()) {
        out += "[]";
        break;
      }
      out += '[';
      bool first = true;
      for (const Value& x : v.as_list()) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        newline(depth + 1);
        json_of(x, indent, depth + 1, out);
      }
      newline(depth);
      out += ']';
      break;
    }
    case Value::Type::kDict: {
      if (v.as_dict().empty()) {
        out += "{}";
        break;
      }
      out += '{';
      bool first = true;
      for (const auto& [k, x] : v.as_dict()) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        newline(depth + 1);
        json_string(k, out);
        out += ": ";
        json_of(x, indent, depth + 1, out);
      }
      newline(depth);
      out += '}';
      break;
    }
    case Value::Type::kFunction: out += "null"; break;
  }
}

}  // namespace

std::string Value::to_json(int indent) const {
  std::string out;
  json_of(*this, indent, 0, out);
  return out;
}

std::string Value::repr() const {
  switch (type_) {
    case Type::kString: {
      std::string out = "'";
      for (char c : s_) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
      }
      return out + "'";
    }
    case Type::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      return out + "]";
    }
    case Type::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : *dict_) {
        out += (first ? "'" : ", '") + k + "': " + v.repr();
        first = false;
      }
      return out + "}";
    }
    default: return to_output();
  }
}

std::string Value::to_output() const {
  switch (type_) {
    case Type::kUndefined: return "";
    case Type::kNone: return "None";
    case Type::kBool: return b_ ? "True" : "False";
    case Type::kInt: return std::to_string(i_);
    case Type::kFloat: return float_text(d_);
    case Type::kString: return s_;
    case Type::kFunction: return "<function>";
    default: return repr();
  }
}

const char* Value::type_name() const {
  switch (type_) {
    case Type::kUndefined: return "undefined";
    case Type::kNone: return "none";
    case Type::kBool: return "bool";
    case Type::kInt: return "int";
    case Type::kFloat: return "float";
    case Type::kString: return "string";
    case Type::kList: return "list";
    case Type::kDict: return "dict";
    case Type::kFunction: return "function";
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type() == Value::Type::kInt && b.type() == Value::Type::kInt) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone: return true;
    case Value::Type::kBool: return a.as_bool() == b.as_bool();
    case Value::Type::kString: return a.as_string() == b.as_string();
    case Value::Type::kList: return a.as_list() == b.as_list();
    case Value::Type::kDict: {
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [k, v] : a.as_dict()) {
        if (!(b.get(k) == v)) return false;
      }
      return true;
    }
    default: return false;
  }
}

}  // namespace nanoserve::chat
