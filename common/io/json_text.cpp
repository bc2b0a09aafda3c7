#include "common/io/json_text.h"

#include <algorithm>

#include "common/error.h"

namespace nanoserve {
namespace {

// Thrown from the parser callback; they carry nothing, the caller words the message.
struct TooDeep {};
struct TooMany {};

}  // namespace

int line_of_excess_nesting(std::string_view text, int max_depth) {
  int depth = 0, line = 1;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return line;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return 0;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& file, int first_line,
                               const JsonLimits& limits) {
  using nlohmann::json;
  using event_t = json::parse_event_t;
  const int max_depth = limits.max_depth;
  uint64_t elements = 0;
  // `depth` is the number of containers enclosing the one that starts: 0 for the top level.
  // The end events close what a start already counted.
  const json::parser_callback_t bound = [&](int depth, event_t event, json&) {
    if (event == event_t::object_end || event == event_t::array_end) return true;
    if ((event == event_t::object_start || event == event_t::array_start) && depth >= max_depth) {
      throw TooDeep{};
    }
    if (++elements > limits.max_elements) throw TooMany{};
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), bound);
  } catch (const TooDeep&) {
    const int at = line_of_excess_nesting(text, max_depth);
    throw LoadError(file + ":" + std::to_string(first_line - 1 + (at > 0 ? at : 1)), "json",
                    "arrays and objects nest deeper than " + std::to_string(max_depth) +
                        " levels (the limit for JSON input)");
  } catch (const TooMany&) {
    throw LoadError(file, "json",
                    "holds more than " + std::to_string(limits.max_elements) +
                        " values and keys (the limit" +
                        (limits.elements_reason.empty() ? "" : " " + limits.elements_reason) +
                        ")");
  } catch (const json::parse_error& e) {
    // e.byte is 1-based; the line is where the parser stopped.
    const std::size_t end = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    int line = first_line;
    for (std::size_t i = 0; i < end; ++i) line += text[i] == '\n';
    throw LoadError(file + ":" + std::to_string(line), "json",
                    std::string("is not valid JSON: ") + e.what());
  } catch (const json::exception& e) {
    throw LoadError(file, "json", std::string("is not valid JSON: ") + e.what());
  }
}

}  // namespace nanoserve
