// libFuzzer target: chat templates (common/chat/) parsed and rendered on a small conversation
// (seeds: copies of tests/data/chat_templates/*.jinja),
// with and without add_generation_prompt. Only nanoserve::Error may escape; the renderer's
// limits (output bytes, loop iterations, nesting) keep every input finite.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/chat/chat_template.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const nanoserve::chat::ChatTemplate t(source, "<s>", "</s>");
    const std::vector<nanoserve::chat::ChatMessage> messages = {
        {"system", "Be brief."}, {"user", "Hi {{ there }}"}, {"assistant", "Hello."}, {"user", "Bye"}};
    (void)t.render(messages, true);
    (void)t.render({messages[1]}, false);
  } catch (const nanoserve::Error&) {
    // Rejected with a message: the expected outcome for malformed input.
  }
  return 0;
}
