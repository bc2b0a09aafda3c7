#pragma once
/// \file
/// \brief The chapter's inputs: prompts (the openings of stories from the TinyStories text
/// sample's evaluation slice) and the calibration sequences GPTQ and AWQ drafts are fitted on
/// (its calibration slice) — two disjoint slices, so a draft is never fitted to the text it is
/// measured on. Without the sample: fixed prompts, and the prompts double as calibration.

#include <string>
#include <vector>

#include "common/model_bundle.h"

namespace nanoserve::ch06 {

/// \brief Prompts and calibration sequences for one target.
struct SpecInputs {
  std::vector<std::vector<int>> prompts;      ///< (n, prompt_tokens) token ids, BOS first
  std::vector<std::vector<int>> calibration;  ///< sequences for GPTQ / AWQ
  std::string source;                         ///< where the prompts came from, for reports
};

/// \brief `n` prompts of `prompt_tokens` tokens (BOS included) for `bundle`'s tokenizer.
/// Throws `InvalidArgument` when the text sample's stories are too short for `prompt_tokens`.
SpecInputs spec_inputs(const ModelBundle& bundle, int n, int prompt_tokens);

}  // namespace nanoserve::ch06
