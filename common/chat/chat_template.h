#pragma once
/// \file
/// \brief `chat::ChatTemplate`: a model's chat template (`chat_template` of
/// `tokenizer_config.json`, GGUF `tokenizer.chat_template`) rendered for a conversation.

#include <string>
#include <vector>

#include "common/chat/jinja.h"

namespace nanoserve::chat {

/// \brief One turn of a conversation.
struct ChatMessage {
  std::string role;     ///< "system", "user" or "assistant"
  std::string content;  ///< the text
};

/// \brief A parsed chat template with the special tokens it refers to.
class ChatTemplate {
 public:
  /// \brief Parses `source` (throws `TemplateError`); `bos_token` / `eos_token` are the texts
  /// the template sees under those names ("" for a tokenizer without one).
  ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token);

  /// \brief The prompt text for `messages`; with `add_generation_prompt` it ends where the
  /// assistant's reply begins. Throws `TemplateError`, e.g. when the template itself
  /// refuses the conversation (Mistral's "roles must alternate").
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

 private:
  Template template_;
  std::string bos_, eos_;
};

}  // namespace nanoserve::chat
