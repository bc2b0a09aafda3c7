#pragma once
/// \file
/// \brief Helpers for tests of the kernel-based engine: skipping without a device (cuda build
/// on a machine without a GPU), a `Decoder` that records every logits vector, and a
/// replay of a fixed token sequence through any decoder (teacher forcing), so two decoders are
/// compared on identical inputs at every step.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/allclose.h"
#include "common/engine/model/device_info.h"
#include "common/generation/generate.h"
#include "common/tokenizer/tokenizer.h"
#include "reference_story.h"

namespace nanoserve::testing {

/// \brief Skips the current test when no CUDA device can run kernels (never in the simulator).
#define NANOSERVE_REQUIRE_DEVICE()                                                   \
  if (!::nanoserve::engine::device_available()) {                                   \
    GTEST_SKIP() << "no CUDA device: engine tests need a GPU in the cuda build";    \
  }

/// \brief Expects `got` within `tol` of `want`; on failure prints `context` and the worst and
/// first-bad elements.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         Tolerance tol, const std::string& context) {
  const CloseResult r = allclose(got, want, tol);
  EXPECT_TRUE(r.ok) << context << ": " << r.summary();
}

/// \brief Logits after each step of a replay: entry 0 after the prompt, entry i after the
/// i-th fed-back token.
using StepLogits = std::vector<std::vector<float>>;

/// \brief Feeds `tokens` through `decoder` as generation would: the first `prompt_tokens` in
/// one call, then one token per call. Returns the logits of every call.
inline StepLogits replay(Decoder& decoder, const std::vector<int>& tokens,
                         int prompt_tokens) {
  StepLogits out;
  decoder.reset();
  out.push_back(decoder.forward(
      std::vector<int>(tokens.begin(), tokens.begin() + prompt_tokens), 0));
  for (int pos = prompt_tokens; pos < static_cast<int>(tokens.size()); ++pos) {
    out.push_back(decoder.forward({tokens[static_cast<std::size_t>(pos)]}, pos));
  }
  return out;
}

/// \brief Forwards to another decoder and keeps every logits vector it returned.
class RecordingDecoder final : public Decoder {
 public:
  /// \brief Records the calls made to `inner` (which must outlive it).
  explicit RecordingDecoder(Decoder& inner) : inner_(inner) {}
  /// \brief Resets `inner` and the record.
  void reset() override {
    inner_.reset();
    logits_.clear();
  }
  /// \brief `inner.forward`, recorded.
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override {
    logits_.push_back(inner_.forward(tokens, start_pos));
    return logits_.back();
  }
  /// \brief `inner`'s vocabulary size.
  int vocab_size() const override { return inner_.vocab_size(); }
  /// \brief `inner`'s context.
  int max_seq_len() const override { return inner_.max_seq_len(); }
  /// \brief `inner`'s device.
  std::string device_name() const override { return inner_.device_name(); }
  /// \brief Logits of every call since the last reset.
  const StepLogits& logits() const { return logits_; }

 private:
  Decoder& inner_;
  StepLogits logits_;
};

/// \brief Greedy generation of up to `steps` tokens, stopping only at the context's end.
inline GenerateResult greedy(Decoder& decoder, const std::vector<int>& prompt, int steps) {
  GenerateOptions opt;
  opt.max_new_tokens = steps;
  opt.sampling.temperature = 0.0f;
  return generate(decoder, prompt, opt);
}

/// \brief Greedy generation from BOS through `decoder` (stories260K behind it, with
/// `tokenizer`) must begin with llama2.c's reference story. Greedy decoding is causal: the
/// first 80 tokens (~220 characters, more than the quoted reference) are the same whether
/// run.c goes on to 256 positions or not.
inline void expect_reference_story(Decoder& decoder, const Tokenizer& tokenizer) {
  GenerateOptions opt;
  opt.max_new_tokens = 80;
  opt.sampling.temperature = 0.0f;
  opt.stop_tokens = {tokenizer.bos_id(), tokenizer.eos_id()};
  const GenerateResult r = generate(decoder, {tokenizer.bos_id()}, opt);
  const std::string text = tokenizer.decode(r.tokens);
  EXPECT_EQ(text.rfind(kStories260KReferenceStoryStart, 0), 0u) << "generated:\n" << text;
}

}  // namespace nanoserve::testing
