#pragma once
/// \file
/// \brief `chat::Value`: the dynamic value of the Jinja subset chat templates use (undefined,
/// none, bool, int, float, string, list, dict, function), with Python's truthiness,
/// equality and printing.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace nanoserve::chat {

class Value;
/// \brief Keyword arguments of a call, in order.
using Kwargs = std::vector<std::pair<std::string, Value>>;

/// \brief A Jinja value. Lists and dicts are shared (a `namespace()` set through one name is
/// seen through every other), as in Python.
class Value {
 public:
  /// \brief The kinds of value.
  enum class Type { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };
  /// \brief A list's items.
  using List = std::vector<Value>;
  /// \brief A dict's entries in insertion order (templates iterate them in that order).
  using Dict = std::vector<std::pair<std::string, Value>>;
  /// \brief A callable: positional and keyword arguments to a value.
  using Function = std::function<Value(const std::vector<Value>&, const Kwargs&)>;

  /// \brief Undefined (what a missing name or key gives).
  Value() = default;
  /// \brief A bool.
  static Value boolean(bool b);
  /// \brief An integer.
  static Value integer(int64_t i);
  /// \brief A float.
  static Value number(double d);
  /// \brief A string.
  static Value string(std::string s);
  /// \brief None.
  static Value none();
  /// \brief A new list.
  static Value list(List items = {});
  /// \brief A new dict.
  static Value dict(Dict entries = {});
  /// \brief A function.
  static Value function(Function f);
  /// \brief JSON → value (objects keep their order of appearance in `j`).
  static Value from_json(const nlohmann::json& j);

  /// \brief Which kind.
  Type type() const { return type_; }
  /// \brief Not undefined.
  bool is_defined() const { return type_ != Type::kUndefined; }
  /// \brief Int or float.
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  /// \brief Python truthiness (empty string/list/dict, 0, none and undefined are false).
  bool truthy() const;
  /// \brief The bool (kBool only).
  bool as_bool() const { return b_; }
  /// \brief The integer (kInt; a bool counts as 0/1).
  int64_t as_int() const { return type_ == Type::kBool ? int64_t(b_) : i_; }
  /// \brief The number as a double (kInt or kFloat).
  double as_double() const { return type_ == Type::kFloat ? d_ : double(as_int()); }
  /// \brief The string (kString).
  const std::string& as_string() const { return s_; }
  /// \brief The list (kList).
  List& as_list() const { return *list_; }
  /// \brief The dict (kDict).
  Dict& as_dict() const { return *dict_; }
  /// \brief The function (kFunction).
  const Function& as_function() const { return *fn_; }

  /// \brief `dict[key]`, undefined when absent (kDict only).
  Value get(const std::string& key) const;
  /// \brief Sets `dict[key]` (kDict only).
  void set(const std::string& key, Value v) const;

  /// \brief What `{{ v }}` prints: strings as they are, undefined as "", others as Python
  /// prints them (True, None, 1.5, ['a', 1], {'k': 'v'}).
  std::string to_output() const;
  /// \brief Python's `repr`-like text (strings quoted), for lists and dicts.
  std::string repr() const;
  /// \brief `tojson`: JSON with Python's `json.dumps` separators; `indent` < 0: one line.
  std::string to_json(int indent = -1) const;
  /// \brief A name for messages ("string", "list", …).
  const char* type_name() const;

  /// \brief Python `==` (numbers by value, lists and dicts deeply).
  friend bool operator==(const Value& a, const Value& b);

 private:
  Type type_ = Type::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

}  // namespace nanoserve::chat
