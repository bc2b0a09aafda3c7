#pragma once
// The syntax tree of a parsed chat::Template (internal to common/chat/).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/chat/jinja_value.h"

namespace nanoserve::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// One expression node.
struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kAttr,     // args[0].name
    kItem,     // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]] (null parts: omitted)
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..])
    kNot,      // not args[0]
    kNeg,      // -args[0]
    kBinary,   // args[0] op args[1]
    kAnd,      // args[0] and args[1]
    kOr,       // args[0] or args[1]
    kIf,       // args[0] if args[1] else args[2] (args[2] may be null)
    kList,     // [args...]
    kDict,     // {kwargs...} with keys args (pairs: args[2k], args[2k+1])
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;  // kName, kAttr, kCall of a method, kFilter, kTest, kBinary operator
  bool negated = false;  // kTest: "is not"
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

// One statement node; a template is a list of them.
struct TemplateNode {
  enum class Kind { kText, kOutput, kIf, kFor, kSet, kBody };
  Kind kind = Kind::kBody;
  int line = 0;
  std::string text;                 // kText
  ExprPtr expr;                     // kOutput, kSet value, kFor iterable
  // kIf: conditions[i] guards bodies[i]; bodies has one more entry for `else` when present.
  std::vector<ExprPtr> conditions;
  std::vector<std::unique_ptr<TemplateNode>> bodies;
  // kFor: loop variables (one, or two for `for k, v in ...`), optional filter, body, else.
  std::vector<std::string> targets;
  ExprPtr filter;
  std::unique_ptr<TemplateNode> body, else_body;
  // kSet: target name, or `target.attr` when attr is not empty.
  std::string attr;
  std::vector<std::unique_ptr<TemplateNode>> children;  // kBody
};

}  // namespace nanoserve::chat
