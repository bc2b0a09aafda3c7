// nanoserve eval: perplexity and bits-per-byte of a model over a text file of documents.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "apps/nanoserve/commands.h"
#include "apps/nanoserve/model_source.h"
#include "common/data_path.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/error.h"
#include "common/eval/perplexity.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::cli {

namespace {
struct EvalArgs {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string text = "tinystories_valid_sample.txt";
  eval::EvalOptions options;
  std::string device = "cpu";
  std::string dtype;     // empty: fp32 on the CPU oracle, engine::default_dtype() on the device
  std::string kv_dtype;  // empty: --dtype
  std::string json;
};

int run_eval(EvalArgs& a) {
  const ModelSource src = load_model_source(a.model, a.tokenizer, a.device == "gpu");
  const std::optional<std::string> text = find_data_file(a.text);
  if (!text) throw LoadError(a.text, "path", "text file not found (searched $NANOSERVE_DATA, data/models)");
  const ModelConfig& config = src.model.config;
  if (a.options.window > config.max_seq_len) {
    throw InvalidArgument("--window " + std::to_string(a.options.window) +
                          " exceeds the model's context of " +
                          std::to_string(config.max_seq_len));
  }
  if (isatty(STDERR_FILENO)) {
    a.options.progress = [](int64_t done, int64_t total) {
      std::fprintf(stderr, "\r%lld/%lld documents", static_cast<long long>(done),
                   static_cast<long long>(total));
      if (done == total) std::fputc('\n', stderr);
    };
  }
  // gpu: every window's logits from the kernels (all positions of one pass), through a
  // one-region naive KV cache of the window's length; for an NSQM file, the quantized linears.
  // cpu: the oracle (on the dequantized weights for an NSQM file).
  std::unique_ptr<engine::DeviceModel> device_model;
  std::unique_ptr<engine::ModelRunner> runner;
  std::unique_ptr<engine::NaiveKVCache> cache;
  eval::LogitsFn logits;
  std::string device = "CPU oracle (Eigen, fp32)";
  if (a.device == "gpu") {
    const DType dtype = device_dtype_or_default(a.dtype);
    device_model = src.to_device(dtype);
    const int rows = std::min(a.options.window, 128);  // longer windows run in chunks
    runner = std::make_unique<engine::ModelRunner>(*device_model,
                                                   engine::RunnerOptions{rows, rows, dtype});
    cache = std::make_unique<engine::NaiveKVCache>(config, kv_dtype_or(a.kv_dtype, dtype),
                                                   a.options.window, 1);
    logits = engine::kernel_logits(*runner, *cache);
    device = engine::device_name() + " · kernels, " + device_model->weight_format() + " weights";
  } else {
    check_cpu_dtypes(a.dtype, a.kv_dtype);
    logits = eval::oracle_logits(src.model);
    if (src.quantized) device = "CPU oracle (Eigen, fp32, on the dequantized weights)";
  }
  const eval::EvalResult r = eval::evaluate_file(*text, *src.tokenizer, logits, a.options);
  std::printf("model          %s\ndevice         %s\ntext           %s\nwindow/stride  %d/%d\n",
              src.description.c_str(), device.c_str(),
              text->c_str(), a.options.window,
              a.options.stride > 0 ? a.options.stride : a.options.window - 1);
  std::printf("documents      %lld\nwindows        %lld\ntokens         %lld\nbytes          %lld\n",
              static_cast<long long>(r.documents), static_cast<long long>(r.windows),
              static_cast<long long>(r.tokens), static_cast<long long>(r.bytes));
  std::printf("nll (nats)     %.4f\nperplexity     %.4f\nbits-per-byte  %.4f\n", r.nll, r.perplexity,
              r.bits_per_byte);
  if (!a.json.empty()) {
    nlohmann::json rep = make_report("nanoserve eval",
                                     a.device == "gpu" ? engine::kernel_backend() : "cpu-oracle", device);
    rep["records"].push_back({{"model", src.description}, {"text", *text},
                              {"window", a.options.window}, {"stride", a.options.stride},
                              {"documents", r.documents}, {"tokens", r.tokens},
                              {"bytes", r.bytes}, {"nll", r.nll}, {"perplexity", r.perplexity},
                              {"bits_per_byte", r.bits_per_byte}});
    write_json(a.json, rep);
  }
  return 0;
}
}  // namespace

Action add_eval(CLI::App& parent) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* c = parent.add_subcommand("eval", "Perplexity and bits-per-byte over a text file");
  c->add_option("--model,-m", args->model,
                "model file, directory, synthetic:<name>, or a quantized .nsqm file")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", args->tokenizer, "tokenizer file (default: found from the model)");
  c->add_option("--text", args->text, "documents to score")->capture_default_str();
  c->add_option("--window,-w", args->options.window, "most positions per forward pass (BOS included)")
      ->capture_default_str()->check(CLI::Range(2, 1 << 20));
  c->add_option("--stride", args->options.stride,
                "new tokens scored per later window; 0 = window - 1 (no overlap)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  c->add_option("--delimiter", args->options.delimiter, "document separator")
      ->capture_default_str();
  c->add_flag("--score-eos", args->options.score_eos, "also predict EOS after each document");
  c->add_option("--device", args->device,
                 "cpu = the Eigen oracle; gpu = the kernels (a GPU, or the CPU simulator in the "
                 "sim build)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu"}));
  c->add_option("--dtype", args->dtype,
                 "storage type of weights and activations (--device gpu; default: bf16 on a GPU "
                 "build, fp32 in the simulator and on the CPU oracle)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  c->add_option("--kv-dtype", args->kv_dtype,
                 "storage type of the KV cache (--device gpu; default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  c->add_option("--json", args->json, "also write the result as JSON to this path");
  return [args] { return run_eval(*args); };
}

}  // namespace nanoserve::cli
