#include "common/chat/chat_template.h"

#include <utility>

namespace nanoserve::chat {

ChatTemplate::ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token)
    : template_(source), bos_(std::move(bos_token)), eos_(std::move(eos_token)) {}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
  Value::List list;
  for (const ChatMessage& m : messages) {
    list.push_back(Value::dict({{"role", Value::string(m.role)}, {"content", Value::string(m.content)}}));
  }
  const Value context = Value::dict({{"messages", Value::list(std::move(list))},
                                     {"add_generation_prompt", Value::boolean(add_generation_prompt)},
                                     {"bos_token", Value::string(bos_)},
                                     {"eos_token", Value::string(eos_)}});
  return template_.render(context);
}

}  // namespace nanoserve::chat
