#pragma once
/// \file
/// \brief The syntax tree of a parsed `chat::Template` (used by jinja_parse.cpp and
/// jinja_eval.cpp only).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/chat/jinja_value.h"

namespace nanoserve::chat {

struct Expr;
/// \brief An owned expression node.
using ExprPtr = std::unique_ptr<Expr>;

/// \brief One expression node; `args` holds the operands named in each kind's comment.
struct Expr {
  /// \brief The kinds of expression.
  enum class Kind {
    kLiteral,  ///< `value`
    kName,     ///< the variable `name`
    kAttr,     ///< `args[0].name`
    kItem,     ///< `args[0][args[1]]`
    kSlice,    ///< `args[0][args[1]:args[2]:args[3]]` (null parts: omitted)
    kCall,     ///< `args[0](args[1..], kwargs)`
    kFilter,   ///< `args[0] | name(args[1..], kwargs)`
    kTest,     ///< `args[0] is [not] name(args[1..])`
    kNot,      ///< `not args[0]`
    kNeg,      ///< `-args[0]`
    kBinary,   ///< `args[0] name args[1]` (name is the operator)
    kAnd,      ///< `args[0] and args[1]`
    kOr,       ///< `args[0] or args[1]`
    kIf,       ///< `args[0] if args[1] else args[2]` (args[2] may be null)
    kList,     ///< `[args...]`
    kDict,     ///< `{args[0]: args[1], args[2]: args[3], ...}`
  };
  Kind kind;              ///< which expression
  int line = 0;           ///< source line, for messages
  Value value;            ///< kLiteral: the value
  std::string name;       ///< name, attribute, filter, test or operator
  bool negated = false;   ///< kTest: `is not`
  std::vector<ExprPtr> args;                            ///< operands
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  ///< keyword arguments (calls, filters)
};

/// \brief One statement node; a template is a kBody of them.
struct TemplateNode {
  /// \brief The kinds of statement.
  enum class Kind {
    kText,    ///< literal `text`
    kOutput,  ///< `{{ expr }}`
    kIf,      ///< `conditions[i]` guards `bodies[i]`; one extra body is the `else`
    kFor,     ///< `for targets in expr [if filter]`, `body`, optional `else_body`
    kSet,     ///< `set targets[0][.attr] = expr`
    kBody,    ///< `children` in order
  };
  Kind kind = Kind::kBody;  ///< which statement
  int line = 0;             ///< source line, for messages
  std::string text;         ///< kText
  ExprPtr expr;             ///< kOutput, kSet value, kFor iterable
  std::vector<ExprPtr> conditions;                      ///< kIf
  std::vector<std::unique_ptr<TemplateNode>> bodies;    ///< kIf
  std::vector<std::string> targets;                     ///< kFor variables (1–2), kSet name
  ExprPtr filter;                                       ///< kFor: the `if` filter, or null
  std::unique_ptr<TemplateNode> body;                   ///< kFor
  std::unique_ptr<TemplateNode> else_body;              ///< kFor: the `else`, or null
  std::string attr;                                     ///< kSet: `ns.attr`, or ""
  std::vector<std::unique_ptr<TemplateNode>> children;  ///< kBody
};

}  // namespace nanoserve::chat
