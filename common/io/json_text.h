#pragma once
/// \file
/// \brief Parsing JSON a user supplies (config.json, tokenizer.json, safetensors headers,
/// JSONL trace lines) with its nesting bounded before any value is built.
///
/// nlohmann::json parses iteratively, but much of what follows is recursive: `dump()` (error
/// messages quote values), copies, comparisons. A few hundred thousand nested `[` therefore
/// overflow the stack later, far from the parser. The parser callback sees the depth of every
/// array and object as it opens, so the limit is enforced there, and the error names the line
/// where the limit was crossed.

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nanoserve {

/// \brief The deepest nesting accepted in any JSON input. Real files nest at most ~6 levels
/// (tokenizer.json 5, config.json 3, a safetensors header 3, a trace line 1); 64 leaves room
/// and keeps every recursive walk of the value a few kilobytes of stack.
inline constexpr int kMaxJsonDepth = 64;

/// \brief What one JSON input may hold, enforced while it is parsed (before the value exists).
struct JsonLimits {
  int max_depth = kMaxJsonDepth;  ///< deepest nesting of arrays and objects
  /// \brief Most elements (values, keys, arrays and objects, each counted once): the size of
  /// the tree the parser builds. Bounding it bounds memory by what the input claims to be
  /// (a vocabulary of V tokens needs ~5 V), not by how much text it has.
  uint64_t max_elements = UINT64_MAX;
  /// \brief Said after the element limit in its message, e.g. "for a tokenizer of at most
  /// 512 tokens".
  std::string elements_reason;
};

/// \brief Parses `text` as one JSON value. `file` names it in errors and `first_line` is the
/// line number of the text's first line in that file (a JSONL line passes its own).
/// Throws `LoadError("FILE:LINE", "json", …)` for nesting deeper than `limits.max_depth` (the
/// line where it was crossed) or a syntax error (the line where the parser stopped), and
/// `LoadError(file, "json", …)` for more than `limits.max_elements` elements.
nlohmann::json parse_json_text(std::string_view text, const std::string& file,
                               int first_line = 1, const JsonLimits& limits = {});

/// \brief 1-based line of the first byte at which `text` nests arrays/objects deeper than
/// `max_depth` (brackets inside strings do not count), or 0 when it never does.
int line_of_excess_nesting(std::string_view text, int max_depth);

}  // namespace nanoserve
