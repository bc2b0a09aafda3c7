#pragma once
/// \file
/// \brief Shared inputs of the chapter 6 tests: the target models (synthetic:tiny, and
/// stories260K when the data is present), their drafts, prompts, and the plain-decoding
/// reference every speculative run is compared with.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/generation/generate.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"
#include "common/quant/quantize_model.h"
#include "common/speculative/draft_models.h"
#include "common/speculative/rollback_decoder.h"
#include "test_support.h"

namespace nanoserve::testing {

/// \brief A target model, a prompt for it, and named draft models built from it.
struct SpecFixtureModel {
  Model target;
  std::vector<int> prompt;
  int eos = -1;  ///< the tokenizer's EOS (-1: none)
  std::map<std::string, Model> drafts;  ///< by label
};

/// \brief Drafts every target gets: an identical copy, its first 1 and 2 layers, INT8
/// per-channel and INT4 g32 RTN copies.
inline void add_common_drafts(SpecFixtureModel& m) {
  m.drafts["identical"] = m.target;
  m.drafts["layers-1"] = speculative::first_layers(m.target, 1);
  m.drafts["layers-2"] = speculative::first_layers(m.target, 2);
  quant::QuantizeOptions int8;
  int8.scheme = {8, 0, true};
  m.drafts["int8-rtn"] = speculative::quantized_draft(m.target, {}, int8).model;
  quant::QuantizeOptions int4;
  int4.scheme = {4, 32, true};
  m.drafts["int4-rtn"] = speculative::quantized_draft(m.target, {}, int4).model;
}

/// \brief synthetic:tiny (vocab 512, 4 layers, context 256) with its drafts, plus an unrelated
/// model of the same shape (another seed): a weak draft that is rejected most of the time.
inline const SpecFixtureModel& synthetic_tiny() {
  static const SpecFixtureModel m = [] {
    SpecFixtureModel s;
    s.target = make_synthetic_model("synthetic:tiny");
    s.prompt = {1, 17, 300, 42, 99, 17, 300, 5};
    add_common_drafts(s);
    s.drafts["unrelated"] = make_synthetic_model("synthetic:tiny", 99);
    return s;
  }();
  return m;
}

/// \brief stories260K with its drafts, including INT4 GPTQ and AWQ calibrated on a few short
/// sequences of its own greedy text (enough to exercise the algorithms; the chapter's quality
/// numbers use the text sample). nullptr when the file is absent.
inline const SpecFixtureModel* stories260k() {
  static std::unique_ptr<SpecFixtureModel> m;
  if (!m && data_file("stories260K.bin")) {
    m = std::make_unique<SpecFixtureModel>();
    ModelBundle bundle = load_model_bundle("stories260K.bin");
    m->target = bundle.model;
    m->eos = bundle.tokenizer->eos_id();
    m->prompt = bundle.tokenizer->encode("Once upon a time, there was a little dog", true, false);
    add_common_drafts(*m);
    speculative::OracleRollbackDecoder plain(m->target);
    GenerateOptions greedy;
    greedy.max_new_tokens = 120;
    greedy.sampling.temperature = 0;
    const std::vector<int> text = generate(plain, {bundle.tokenizer->bos_id()}, greedy).tokens;
    std::vector<std::vector<int>> calibration;
    for (size_t at = 0; at + 40 <= text.size(); at += 40) {
      calibration.emplace_back(text.begin() + long(at), text.begin() + long(at + 40));
    }
    for (quant::QuantMethod method : {quant::QuantMethod::kGptq, quant::QuantMethod::kAwq}) {
      quant::QuantizeOptions o;
      o.method = method;
      o.scheme = {4, 32, true};
      m->drafts[std::string("int4-") + quant::to_string(method)] =
          speculative::quantized_draft(m->target, calibration, o).model;
    }
  }
  return m.get();
}

/// \brief Plain `generate` on the oracle: the reference output.
inline GenerateResult plain_generate(const Model& model, const std::vector<int>& prompt,
                                     const GenerateOptions& options, int capacity = 0) {
  speculative::OracleRollbackDecoder backend(model, capacity);
  return generate(backend, prompt, options);
}

/// \brief Greedy options with `max_new_tokens` and optional stop tokens.
inline GenerateOptions greedy_options(int max_new_tokens, std::vector<int> stop = {}) {
  GenerateOptions o;
  o.max_new_tokens = max_new_tokens;
  o.sampling.temperature = 0;
  o.stop_tokens = std::move(stop);
  return o;
}

}  // namespace nanoserve::testing
