// nanoserve logits: the logits of every position of a sequence of token ids, from the kernels
// (--device gpu) or the CPU oracle, as a short table and, with --json, every row in full — what
// another implementation's logits are compared with (scripts/hf_logits_check.py runs it next to
// Hugging Face transformers on the same checkpoints). Token ids, not text: no tokenizer is read,
// so a checkpoint without one (peers/write_hf_checkpoints) works too.
//
//   nanoserve logits -m data/models/SmolLM2-135M --tokens 1,504,3329 --device gpu --dtype fp32
//
// The weights are what load_model reads (fp32 on the host), uploaded in --dtype for the kernels.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/nanoserve/commands.h"
#include "apps/nanoserve/model_source.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/error.h"
#include "common/eval/perplexity.h"
#include "common/loaders/model_loader.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::cli {

namespace {
struct LogitsArgs {
  std::string model = default_model_spec();
  std::vector<int> tokens;
  std::string device = "cpu";
  std::string dtype;     // empty: fp32 on the CPU oracle, engine::default_dtype() on the device
  std::string kv_dtype;  // empty: --dtype
  std::string json;
};

/// Refuses a token id outside the vocabulary and a sequence longer than the context.
void check_tokens(const std::vector<int>& tokens, const ModelConfig& c, const std::string& model) {
  if (tokens.empty()) throw InvalidArgument("--tokens: give at least one token id");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size) {
      throw InvalidArgument("--tokens: id " + std::to_string(tokens[i]) + " (position " +
                            std::to_string(i) + ") is outside " + model + "'s vocabulary [0, " +
                            std::to_string(c.vocab_size) + ")");
    }
  }
  if (static_cast<int>(tokens.size()) > c.max_seq_len) {
    throw InvalidArgument("--tokens: " + std::to_string(tokens.size()) +
                          " tokens but the context holds " + std::to_string(c.max_seq_len));
  }
}

int run_logits(const LogitsArgs& a) {
  const bool gpu = a.device == "gpu";
  if (!gpu) check_cpu_dtypes(a.dtype, a.kv_dtype);
  const DType dtype = gpu ? device_dtype_or_default(a.dtype) : DType::kF32;
  const DType kv_dtype = kv_dtype_or(a.kv_dtype, dtype);
  std::string path;
  const ModelFormat format = detect_model_format(a.model, &path);
  const Model model = load_model(a.model);
  const ModelConfig& c = model.config;
  check_tokens(a.tokens, c, a.model);
  const int n = static_cast<int>(a.tokens.size());

  // gpu: one sequence through chapter 1's engine and a naive KV cache of its length (longer
  // than 128 tokens it runs in chunks), as `nanoserve eval --device gpu` runs a window.
  std::unique_ptr<engine::DeviceModel> device_model;
  std::unique_ptr<engine::ModelRunner> runner;
  std::unique_ptr<engine::NaiveKVCache> cache;
  eval::LogitsFn logits_of;
  std::string device = "CPU oracle (Eigen, fp32)";
  if (gpu) {
    device_model = std::make_unique<engine::DeviceModel>(model, dtype);
    const int rows = std::min(n, 128);
    runner = std::make_unique<engine::ModelRunner>(*device_model,
                                                   engine::RunnerOptions{rows, rows, dtype});
    cache = std::make_unique<engine::NaiveKVCache>(c, kv_dtype, n, 1);
    logits_of = engine::kernel_logits(*runner, *cache);
    device = engine::device_name() + " · kernels, " + device_model->weight_format() + " weights";
  } else {
    logits_of = eval::oracle_logits(model);
  }
  const std::vector<float> logits = logits_of(a.tokens);  // (n, vocab)
  const size_t vocab = size_t(c.vocab_size);

  std::printf("model   %s (%s, %s)\ndevice  %s\ndtype   %s, KV %s\n", a.model.c_str(),
              to_string(format), c.architecture.c_str(), device.c_str(), dtype_name(dtype),
              dtype_name(kv_dtype));
  std::printf("%5s %8s %8s %12s\n", "pos", "token", "argmax", "max logit");
  nlohmann::json rep = make_report("nanoserve logits", gpu ? engine::kernel_backend() : "cpu-oracle",
                                   device);
  for (int t = 0; t < n; ++t) {
    const float* row = logits.data() + size_t(t) * vocab;
    const auto argmax = static_cast<int>(std::max_element(row, row + vocab) - row);
    std::printf("%5d %8d %8d %12.5f\n", t, a.tokens[size_t(t)], argmax, double(row[argmax]));
    if (!a.json.empty()) {
      rep["records"].push_back({{"model", a.model}, {"architecture", c.architecture},
                                {"dtype", dtype_name(dtype)}, {"kv_dtype", dtype_name(kv_dtype)},
                                {"position", t}, {"token", a.tokens[size_t(t)]},
                                {"argmax", argmax},
                                {"logits", std::vector<float>(row, row + vocab)}});
    }
  }
  if (!a.json.empty()) write_json(a.json, rep);
  return 0;
}
}  // namespace

Action add_logits(CLI::App& parent) {
  auto args = std::make_shared<LogitsArgs>();
  CLI::App* c = parent.add_subcommand(
      "logits", "The logits of every position of a sequence of token ids (to compare with "
                "another implementation)");
  c->add_option("--model,-m", args->model, "model file, directory or synthetic:<name>")
      ->capture_default_str();
  c->add_option("--tokens", args->tokens,
                "token ids, comma-separated, read from position 0 (no BOS is added)")
      ->required()->delimiter(',');
  c->add_option("--device", args->device,
                "cpu = the Eigen oracle; gpu = the kernels (a GPU in the cuda build, the CPU "
                "simulator in the sim build)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu"}));
  c->add_option("--dtype", args->dtype,
                "storage type of weights and activations (--device gpu; default: bf16 on a GPU "
                "build, fp32 in the simulator and on the CPU oracle)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  c->add_option("--kv-dtype", args->kv_dtype,
                "storage type of the KV cache (--device gpu; default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  c->add_option("--json", args->json,
                "also write every position's full row of logits as JSON to this path");
  return [args] { return run_logits(*args); };
}

}  // namespace nanoserve::cli
