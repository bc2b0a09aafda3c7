// The chapter's measurement table on stories260K through the CPU oracle. Not a timed test: it
// is DISABLED so that ctest never runs it; run it by hand with
//   NANOSERVE_DATA=../shared/data build/sim/tests/test_ch06
//       --gtest_also_run_disabled_tests --gtest_filter='Ch06Measurement.*'   (one line)
// (NANOSERVE_SPEC_REPEATS=n keeps the fastest of n passes; default 2.)
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "common/eval/documents.h"
#include "common/quant/calibration.h"
#include "chapters/ch06_speculative_decoding/spec_sweep.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

TEST(Ch06Measurement, DISABLED_Stories260KTable) {
  NANOSERVE_REQUIRE_DATA(model_path, "stories260K.bin");
  NANOSERVE_REQUIRE_DATA(text_path, "tinystories_valid_sample.txt");
  const ModelBundle bundle = load_model_bundle(model_path);
  const Model& target = bundle.model;
  const std::string text = eval::read_text_file(text_path);

  // Prompts: the first 24 tokens of evaluation documents 0..7; calibration: documents 80..99.
  std::vector<std::vector<int>> prompts = quant::calibration_sequences(
      quant::select_documents(text, {0, 8}), *bundle.tokenizer, 24);
  const std::vector<std::vector<int>> calibration = quant::calibration_sequences(
      quant::select_documents(text, quant::kCalibrationDocuments), *bundle.tokenizer);

  std::vector<DraftModel> models;
  for (int k : {1, 2, 3}) models.push_back(layer_truncated_draft(target, k));
  struct Q { quant::QuantMethod method; int bits; int group; };
  for (const Q q : {Q{quant::QuantMethod::kRtn, 8, 0}, Q{quant::QuantMethod::kRtn, 4, 32},
                    Q{quant::QuantMethod::kGptq, 4, 32}, Q{quant::QuantMethod::kAwq, 4, 32}}) {
    quant::QuantizeOptions o;
    o.method = q.method;
    o.scheme = {q.bits, q.group, true};
    models.push_back(quantized_draft(target, calibration, o));
  }
  const double target_bytes = double(target.weight_bytes(4));
  std::vector<ch06::SweepDraft> drafts;
  for (const DraftModel& d : models) {
    drafts.push_back({d.label, &d.model, double(d.weight_bytes) / target_bytes});
  }
  drafts.push_back({"ngram", nullptr, 0.0});

  std::vector<ch06::SweepCase> cases;
  auto add_case = [&](const std::string& label, float temperature, int tokens) {
    ch06::SweepCase c{label, {}};
    c.options.max_new_tokens = tokens;
    c.options.sampling.temperature = temperature;
    c.options.sampling.seed = 42;
    c.options.stop_tokens = {bundle.tokenizer->eos_id()};
    cases.push_back(c);
  };
  add_case("greedy", 0.0f, 128);
  add_case("T=1", 1.0f, 128);
  add_case("T=2", 2.0f, 128);   // high temperature: flat p and q, fewer agreements
  add_case("short", 0.0f, 4);   // short replies: γ is clipped and prefill dominates

  const char* env = std::getenv("NANOSERVE_SPEC_REPEATS");
  const int repeats = env ? std::max(1, std::atoi(env)) : 2;
  const std::vector<ch06::SweepRow> rows =
      ch06::spec_sweep(target, drafts, prompts, cases, {1, 2, 3, 4, 5, 6, 7, 8}, repeats,
                 [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  std::printf("stories260K target, %zu prompts; CPU oracle timings (Eigen fp32, this machine)\n%s",
              prompts.size(), ch06::format_sweep_table(rows).c_str());
  if (const char* json = std::getenv("NANOSERVE_SPEC_JSON")) {
    nlohmann::json records = nlohmann::json::array();
    for (const ch06::SweepRow& r : rows) records.push_back(to_json(r));
    std::FILE* f = std::fopen(json, "w");
    ASSERT_NE(f, nullptr) << json;
    std::fprintf(f, "%s\n", records.dump(1).c_str());
    std::fclose(f);
  }
}

}  // namespace
}  // namespace nanoserve::speculative
