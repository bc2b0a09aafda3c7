#include "common/tokenizer/pre_tokenizer.h"

#include "common/error.h"

namespace nanoserve {

std::vector<std::string> pre_tokenize(const std::vector<HfPreTokenizerStep>& steps,
                                      std::string_view text) {
  std::vector<std::string> pieces{std::string(text)};
  for (const HfPreTokenizerStep& step : steps) {
    if (!step.regex) continue;
    std::vector<std::string> next;
    next.reserve(pieces.size());
    for (const std::string& p : pieces) step.regex->split(p, next);
    pieces = std::move(next);
  }
  return pieces;
}

std::vector<HfPreTokenizerStep> gguf_pre_tokenizer(const std::string& name) {
  using Kind = HfPreTokenizerStep::Kind;
  auto regex = [](const char* p) { return std::make_shared<const RegexSplitter>(p); };
  if (name == "llama-bpe" || name == "llama3") {
    return {{Kind::kSplit, regex(kLlama3Pattern)}, {Kind::kByteLevel, nullptr}};
  }
  if (name == "qwen2") return {{Kind::kSplit, regex(kQwen2Pattern)}, {Kind::kByteLevel, nullptr}};
  if (name == "smollm") {
    return {{Kind::kDigits, regex(R"(\p{N})")}, {Kind::kByteLevel, regex(kGpt2Pattern)}};
  }
  if (name == "gpt2" || name == "default") return {{Kind::kByteLevel, regex(kGpt2Pattern)}};
  throw InvalidArgument("pre-tokenizer '" + name +
                        "' is not known (llama-bpe, llama3, qwen2, smollm, gpt2, default)");
}

}  // namespace nanoserve
