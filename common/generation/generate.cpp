#include "common/generation/generate.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace nanoserve {

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kMaxTokens: return "max_tokens";
    case StopReason::kStopToken: return "stop_token";
    case StopReason::kContext: return "context";
  }
  return "?";
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GenerateResult generate(Decoder& backend, const std::vector<int>& prompt,
                        const GenerateOptions& options) {
  const int context = backend.max_seq_len();
  const int vocab = backend.vocab_size();
  if (prompt.empty()) throw InvalidArgument("generate: the prompt has no tokens (add BOS)");
  if (static_cast<int>(prompt.size()) > context) {
    throw InvalidArgument("generate: the prompt has " + std::to_string(prompt.size()) +
                          " tokens but the context holds " + std::to_string(context));
  }
  if (options.max_new_tokens < 0) {
    throw InvalidArgument("generate: max_new_tokens = " + std::to_string(options.max_new_tokens) +
                          " must be >= 0");
  }
  for (int t : prompt) {
    if (t < 0 || t >= vocab) {
      throw InvalidArgument("generate: prompt token id " + std::to_string(t) +
                            " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
  options.sampling.validate();

  GenerateResult r;
  r.tokens = prompt;
  r.prompt_tokens = static_cast<int>(prompt.size());
  if (options.max_new_tokens == 0) return r;

  backend.reset();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = backend.forward(prompt, 0);
  r.prefill_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  for (int produced = 0;; ) {
    const int pos = static_cast<int>(r.tokens.size());  // where the new token goes
    const int next = sample(logits.data(), vocab, options.sampling, static_cast<uint64_t>(pos));
    r.tokens.push_back(next);
    ++produced;
    if (options.on_token) options.on_token(next);
    if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), next) !=
        options.stop_tokens.end()) {
      r.stop = StopReason::kStopToken;
      break;
    }
    if (produced == options.max_new_tokens) {
      r.stop = StopReason::kMaxTokens;
      break;
    }
    if (pos + 1 >= context) {  // no position left to feed `next` back at
      r.stop = StopReason::kContext;
      break;
    }
    logits = backend.forward({next}, pos);
  }
  r.decode_seconds = seconds_since(t0);
  return r;
}

}  // namespace nanoserve
