#pragma once
/// \file
/// \brief The autoregressive loop, written once: prefill the prompt, then sample and feed back
/// one token at a time. What computes the logits is a `Decoder` — the CPU oracle here,
/// the kernel-based `ModelRunner` from chapter 1 on.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/sampling/sampler.h"

namespace nanoserve {

/// \brief Something that turns tokens into next-token logits for one sequence, keeping its
/// own KV state between calls.
class Decoder {
 public:
  virtual ~Decoder() = default;
  /// \brief Forgets the current sequence (a new request starts at position 0).
  virtual void reset() = 0;
  /// \brief Processes `tokens` at positions `start_pos ..`; returns the logits (vocab) that
  /// predict the token after the last one.
  virtual std::vector<float> forward(const std::vector<int>& tokens, int start_pos) = 0;
  /// \brief Vocabulary size (length of the logits).
  virtual int vocab_size() const = 0;
  /// \brief Most positions a sequence may use (the model's or the cache's context).
  virtual int max_seq_len() const = 0;
  /// \brief Where the computation runs, for reports (e.g. "CPU oracle (Eigen, fp32)").
  virtual std::string device_name() const = 0;
};

/// \brief How long to generate and when to stop.
struct GenerateOptions {
  int max_new_tokens = 256;   ///< at most this many generated tokens (0 = prompt only)
  SamplingParams sampling;    ///< temperature 0 = greedy
  std::vector<int> stop_tokens;  ///< ids that end generation (kept in the output)
  /// \brief Called with each generated token as soon as it is sampled (may be empty).
  std::function<void(int token)> on_token;
};

/// \brief Why generation stopped.
enum class StopReason {
  kMaxTokens,  ///< produced `max_new_tokens`
  kStopToken,  ///< sampled one of `stop_tokens`
  kContext,    ///< reached the decoder's `max_seq_len`
};

/// \brief "max_tokens", "stop_token" or "context".
const char* to_string(StopReason reason);

/// \brief Tokens and timings of one generation.
struct GenerateResult {
  std::vector<int> tokens;   ///< prompt followed by the generated tokens
  int prompt_tokens = 0;     ///< how many of `tokens` are the prompt
  StopReason stop = StopReason::kMaxTokens;  ///< why it stopped
  double prefill_seconds = 0;  ///< wall time of the prompt's forward pass
  double decode_seconds = 0;   ///< wall time of all later forward passes
  /// \brief Number of generated tokens.
  int generated() const { return static_cast<int>(tokens.size()) - prompt_tokens; }
};

/// \brief Runs the loop on `decoder`. The token at position p is drawn with
/// `sample(logits, …, position = p)`, so the same request always produces the same tokens.
/// Throws `InvalidArgument` for an empty prompt, a prompt that does not leave room for one
/// position in the context, a negative token budget, or a token id outside the vocabulary.
GenerateResult generate(Decoder& decoder, const std::vector<int>& prompt,
                        const GenerateOptions& options);

}  // namespace nanoserve
