#pragma once
/// \file
/// \brief `chat::Template`: the subset of Jinja that Hugging Face chat templates use, parsed
/// once and rendered with a context (`messages`, `add_generation_prompt`, `bos_token`, …).
///
/// Checked against `@huggingface/jinja` (the renderer of transformers.js) on the Llama 3,
/// Qwen2.5, SmolLM2, TinyLlama and Mistral templates (tests/data/chat_templates/). Like
/// transformers, blocks are rendered with `trim_blocks` and `lstrip_blocks`.
///
/// Supported: `{{ }}`, `{% %}`, `{# #}` with `-` whitespace control; `if`/`elif`/`else`,
/// `for` (with `loop.index`, `index0`, `first`, `last`, `length`, `revindex`, an `if` filter
/// and `else`), `set` (names and `ns.attr`); literals, lists, dicts, `.attr`, `[i]`, slices,
/// calls, filters (`trim`, `tojson`, `length`, `upper`, `lower`, `join`, `default`, …),
/// tests (`is defined`, `is none`, `is string`, …), `not and or in ~ + - * / // %`, the
/// conditional `a if c else b`; string and dict methods (`strip`, `startswith`, `split`,
/// `items`, `get`, …); globals `raise_exception`, `range`, `namespace`, `strftime_now`.
/// Anything else is a `TemplateError` naming the line, not a silently different output.

#include <memory>
#include <stdexcept>
#include <string>

#include "common/chat/jinja_value.h"
#include "common/error.h"

namespace nanoserve::chat {

/// \brief A template that does not parse, or that fails while rendering (including the
/// template's own `raise_exception(msg)`, whose message it carries).
class TemplateError : public Error {
 public:
  /// \brief Wraps the message.
  explicit TemplateError(const std::string& message) : Error(message) {}
};

struct TemplateNode;

/// \brief A parsed template.
class Template {
 public:
  /// \brief Parses `source`; throws `TemplateError` ("line N: …") when it is not in the subset.
  explicit Template(const std::string& source);
  ~Template();
  /// \brief Moves the parsed tree.
  Template(Template&&) noexcept;
  /// \brief Moves the parsed tree.
  Template& operator=(Template&&) noexcept;

  /// \brief Renders with the names of `context` (a dict) defined; throws `TemplateError`.
  /// The output is limited to `kMaxOutputBytes` and loops to `kMaxIterations` in total, so a
  /// hostile template fails instead of running away.
  std::string render(const Value& context) const;

  /// \brief Output limit of one render.
  static constexpr size_t kMaxOutputBytes = 16u << 20;
  /// \brief Loop iterations allowed in one render.
  static constexpr long kMaxIterations = 1'000'000;

 private:
  std::unique_ptr<TemplateNode> root_;
};

}  // namespace nanoserve::chat
