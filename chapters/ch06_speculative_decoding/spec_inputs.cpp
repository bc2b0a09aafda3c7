#include "chapters/ch06_speculative_decoding/spec_inputs.h"

#include <algorithm>

#include "common/data_path.h"
#include "common/error.h"
#include "common/eval/documents.h"
#include "common/quant/calibration.h"

namespace nanoserve::ch06 {

namespace {

// Used when the text sample is absent (and by the synthetic model, whose text means nothing).
constexpr const char* kFallbackPrompts[] = {
    "Once upon a time, there was a little girl named Lily. She loved to play outside with her "
    "dog, and every day they ran to the park together.",
    "Tom had a red ball. He liked to throw the ball to his friend Sam. One day the ball went "
    "over the fence and into the garden of an old man.",
    "The sun was warm and the sky was blue. A small bird sat on a branch and sang a happy song "
    "for all the animals in the forest.",
};

std::vector<int> cut(std::vector<int> tokens, int n) {
  tokens.resize(std::min(tokens.size(), std::size_t(n)));
  return tokens;
}

}  // namespace

SpecInputs spec_inputs(const ModelBundle& bundle, int n, int prompt_tokens) {
  const Tokenizer& tok = *bundle.tokenizer;
  SpecInputs in;
  const auto sample = find_data_file("tinystories_valid_sample.txt");
  if (sample && bundle.format != ModelFormat::kSynthetic) {
    const std::string text = eval::read_text_file(*sample);
    // Document 0 is cut at its start (the sample is the head of the validation file).
    const std::string prompts_text =
        quant::select_documents(text, {quant::kEvaluationDocuments.first + 1, n});
    for (const auto& doc : eval::split_documents(prompts_text, eval::kDefaultDelimiter)) {
      std::vector<int> t = tok.encode(std::string(doc), true, false);
      if (int(t.size()) < prompt_tokens) {
        throw InvalidArgument("ch06: a story of the text sample has only " +
                              std::to_string(t.size()) + " tokens; --prompt-tokens " +
                              std::to_string(prompt_tokens) + " is too many");
      }
      in.prompts.push_back(cut(std::move(t), prompt_tokens));
    }
    in.calibration = quant::calibration_sequences(
        quant::select_documents(text, {quant::kCalibrationDocuments.first, 4}), tok, 128);
    in.source = "the text sample (stories 1.." + std::to_string(n) + ")";
    return in;
  }
  for (int i = 0; i < n; ++i) {
    const char* p = kFallbackPrompts[i % std::size(kFallbackPrompts)];
    in.prompts.push_back(cut(tok.encode(p, true, false), prompt_tokens));
  }
  in.calibration = in.prompts;
  in.source = "built-in prompts (no text sample, or a synthetic model)";
  return in;
}

}  // namespace nanoserve::ch06
