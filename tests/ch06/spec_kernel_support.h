#pragma once
/// \file
/// \brief Shared pieces of the chapter 6 tests that run through the kernels: paged backends
/// made from a host model, plain greedy decoding through them (the reference), and the
/// calibration sequences GPTQ/AWQ drafts are fitted on.

#include <memory>
#include <string>
#include <vector>

#include "common/engine/model/device_model.h"
#include "chapters/ch06_speculative_decoding/draft_factory.h"
#include "common/engine/decode/paged_decoder.h"
#include "common/eval/documents.h"
#include "common/generation/generate.h"
#include "common/quant/calibration.h"
#include "common/tokenizer/tokenizer.h"
#include "test_support.h"

namespace nanoserve::testing {

/// \brief `model` in fp32 on the device behind its own paged cache of `max_seq_len` positions
/// (0 = the model's context) with `block_size`-token blocks.
inline std::unique_ptr<engine::PagedDecoder> paged_model(const Model& model,
                                                           int max_seq_len = 0,
                                                           int block_size = 16) {
  engine::PagedDecoderOptions o;
  o.max_seq_len = max_seq_len;
  o.block_size = block_size;
  return std::make_unique<engine::PagedDecoder>(
      std::make_unique<engine::DeviceModel>(model, DType::kF32), o);
}

/// \brief Plain `generate` through the kernels over paged KV: the reference every
/// speculative run through the kernels is compared with.
inline GenerateResult plain_paged_generate(const Model& model, const std::vector<int>& prompt,
                                           const GenerateOptions& options, int max_seq_len = 0) {
  auto backend = paged_model(model, max_seq_len);
  return generate(*backend, prompt, options);
}

/// \brief A kernel draft named `name` for `target` with a cache of the target's context.
inline ch06::KernelDraft kernel_draft(const Model& target, const std::string& name,
                                        const std::vector<std::vector<int>>& calibration = {},
                                        int max_seq_len = 0) {
  engine::PagedDecoderOptions o;
  o.max_seq_len = max_seq_len;
  return ch06::make_kernel_draft(target, ch06::parse_draft_spec(name), calibration,
                                   DType::kF32, o);
}

/// \brief Two short calibration sequences (64 tokens) from the text sample's calibration
/// slice — enough to exercise GPTQ and AWQ; empty when the sample is absent.
inline std::vector<std::vector<int>> short_calibration(const Tokenizer& tokenizer) {
  const auto path = data_file("tinystories_valid_sample.txt");
  if (!path) return {};
  const std::string text = eval::read_text_file(*path);
  return quant::calibration_sequences(quant::select_documents(text, {80, 2}), tokenizer, 64);
}

}  // namespace nanoserve::testing
