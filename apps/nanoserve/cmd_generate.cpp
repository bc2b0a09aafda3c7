// nanoserve generate: prompt in, text out (prompt included) on stdout; statistics on stderr.
// With --tensor-parallel N (under mpirun -np N) the model is split across the ranks: rank 0
// decodes and prints, the others run its passes over their shards and print nothing.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "apps/nanoserve/commands.h"
#include "apps/nanoserve/model_source.h"
#include "apps/nanoserve/tensor_parallel_cli.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/engine/decode/tensor_parallel_decoder.h"
#include "common/cli/cli_checks.h"
#include "common/error.h"
#include "common/generation/generate.h"
#include "common/io/output_file.h"
#include "common/model_bundle.h"
#include "common/oracle/oracle_decoder.h"
#include "common/report.h"

namespace nanoserve::cli {

namespace {
struct GenerateArgs {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string prompt;
  int steps = 256;
  SamplingParams sampling{1.0f, 0, 0.9f, 0.0f, 42};
  std::string device = "cpu";
  std::string dtype;     // empty: fp32 on the CPU oracle, engine::default_dtype() on the device
  std::string kv_dtype;  // empty: --dtype
  bool no_cuda_graphs = false;  // --device gpu: decode steps launched kernel by kernel
  int tensor_parallel = 1;      // ranks the model is split across (> 1: under mpirun)
  std::string json;
};

// `ranks`: the run's ranks under --tensor-parallel N > 1, else null.
int generate_text(const GenerateArgs& a, dist::Communicator* ranks) {
  // Split across ranks, every rank shards the host weights: a Hugging Face directory is read
  // whole, not streamed to one device.
  const ModelSource src = load_model_source(a.model, a.tokenizer, a.device == "gpu" && !ranks);
  const Tokenizer& tok = *src.tokenizer;
  const std::vector<int> prompt = tok.encode(a.prompt, /*add_bos=*/true, /*add_eos=*/false);
  const int context = src.model.config.max_seq_len;
  if (static_cast<int>(prompt.size()) > context) {
    throw InvalidArgument("the prompt has " + std::to_string(prompt.size()) +
                          " tokens but the context holds " + std::to_string(context));
  }
  // The KV cache holds what this run needs, not the context the file claims (a context of
  // 2^20 positions is gigabytes of KV even for a tiny model).
  const int positions = static_cast<int>(
      std::min<std::int64_t>(context, std::int64_t(prompt.size()) + a.steps));
  // cpu: the Eigen oracle (on the dequantized weights for a quantized model). gpu: the kernels
  // through chapter 1's engine with a naive KV cache (chapter 5's quantized linears for an NSQM
  // file) — on a GPU in the cuda build, on the CPU simulator in the sim build (the device name
  // says so).
  std::unique_ptr<engine::DeviceModel> device_model;
  std::unique_ptr<engine::TensorParallelDecoder> split;  // --tensor-parallel N > 1
  std::unique_ptr<Decoder> owned;
  Decoder* backend = nullptr;
  const engine::NaiveDecoder* kernels = nullptr;  // --device gpu: its step counters
  if (ranks != nullptr) {
    if (src.quantized) {
      throw InvalidArgument("--tensor-parallel splits dense checkpoints; " + src.description +
                            " is quantized (run it with --tensor-parallel 1)");
    }
    const DType dtype = device_dtype_or_default(a.dtype);
    split = std::make_unique<engine::TensorParallelDecoder>(*ranks, src.model, positions, dtype,
                                                            kv_dtype_or(a.kv_dtype, dtype));
    if (!split->leads()) {  // the other ranks run rank 0's passes and print nothing
      split->follow();
      return 0;
    }
    kernels = &split->decoder();
    backend = &split->decoder();
  } else if (a.device == "gpu") {
    const DType dtype = device_dtype_or_default(a.dtype);
    device_model = src.to_device(dtype);
    // Each decode step (one token) replays one captured CUDA graph unless --no-cuda-graphs.
    auto decoder = std::make_unique<engine::NaiveDecoder>(
        *device_model, engine::CacheMode::kNaiveCache, positions, dtype,
        kv_dtype_or(a.kv_dtype, dtype), !a.no_cuda_graphs);
    kernels = decoder.get();
    owned = std::move(decoder);
  } else {
    check_cpu_dtypes(a.dtype, a.kv_dtype);
    owned = std::make_unique<oracle::OracleDecoder>(src.model, positions);
  }
  if (backend == nullptr) backend = owned.get();

  GenerateOptions opt;
  opt.max_new_tokens = a.steps;
  opt.sampling = a.sampling;
  // Stories are delimited by BOS in llama2.c's training data and by EOS in the HF models:
  // either one ends the text.
  opt.stop_tokens = {tok.eos_id(), tok.bos_id()};

  // Stream the text: the prompt first, then each token as it is sampled.
  std::fputs(tok.decode(prompt).c_str(), stdout);
  int prev = prompt.back();
  opt.on_token = [&](int t) {
    if (t != tok.eos_id() && t != tok.bos_id()) std::fputs(tok.decode_token(prev, t).c_str(), stdout);
    flush_stdout();  // a full disk or closed pipe stops the run here, with its reason
    prev = t;
  };
  const GenerateResult r = generate(*backend, prompt, opt);
  if (split) split->stop();  // the other ranks' follow() returns
  std::fputc('\n', stdout);
  flush_stdout();  // the text before the statistics on a shared terminal

  // Decode rate: generated tokens over the time after the prompt's forward pass.
  const double tok_per_s = r.decode_seconds > 0 ? r.generated() / r.decode_seconds : 0;
  const std::string device =
      backend->device_name() + (split ? " · " + split->description() : std::string());
  std::fprintf(stderr,
               "model %s | tokenizer %s | device %s\n"
               "prompt %d tokens, generated %d (stop: %s) | prefill %.1f ms | decode %.1f tok/s\n",
               src.description.c_str(), src.tokenizer_path.c_str(), device.c_str(),
               r.prompt_tokens, r.generated(), to_string(r.stop), r.prefill_seconds * 1e3,
               tok_per_s);
  if (kernels != nullptr) {
    std::fprintf(stderr, "steps %s\n", engine::describe(kernels->runner().counters()).c_str());
  }
  if (!a.json.empty()) {
    nlohmann::json rep = make_report("nanoserve generate",
                                     a.device == "gpu" ? engine::kernel_backend() : "cpu-oracle",
                                     device);
    rep["records"].push_back({{"model", src.description},
                              {"prompt_tokens", r.prompt_tokens},
                              {"generated_tokens", r.generated()},
                              {"stop", to_string(r.stop)},
                              {"prefill_ms", r.prefill_seconds * 1e3},
                              {"decode_tokens_per_s", tok_per_s},
                              {"tokens", r.tokens}});
    if (kernels != nullptr) rep["records"][0]["steps"] = engine::to_json(kernels->runner().counters());
    write_json(a.json, rep);
  }
  return 0;
}

int run_generate(const GenerateArgs& a) {
  if (a.tensor_parallel == 1) return generate_text(a, nullptr);
  const std::unique_ptr<dist::Communicator> ranks = join_ranks(a.tensor_parallel, a.device);
  if (!ranks) return 1;  // a rank > 0 of a run with the wrong number of ranks: rank 0 says so
  return on_every_rank(*ranks, [&] { return generate_text(a, ranks.get()); });
}
}  // namespace

Action add_generate(CLI::App& parent) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* c = parent.add_subcommand("generate", "Generate text from a prompt");
  c->add_option("--model,-m", args->model,
                "model file, directory, synthetic:<name>, or a quantized .nsqm file from "
                "`nanoserve quantize` (searched in $NANOSERVE_DATA, data/models)")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", args->tokenizer, "tokenizer file (default: found from the model)");
  c->add_option("--prompt,-p", args->prompt, "prompt text (BOS is prepended)")->capture_default_str();
  c->add_option("--steps,-n", args->steps, "most tokens to generate (the context stops it sooner)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  c->add_option("--temperature,-t", args->sampling.temperature, "0 = greedy")
      ->capture_default_str()->check(number_in(0, 100));
  c->add_option("--top-p", args->sampling.top_p, "nucleus sampling mass in (0, 1]; 1 = off")
      ->capture_default_str()->check(number_in(0, 1, /*open_low=*/true));
  c->add_option("--top-k", args->sampling.top_k, "keep the k most likely tokens; 0 = off")
      ->capture_default_str()->check(CLI::Range(0, 1 << 24));
  c->add_option("--min-p", args->sampling.min_p, "drop tokens below min_p * p_max; 0 = off")
      ->capture_default_str()->check(number_in(0, 1));
  c->add_option("--seed,-s", args->sampling.seed, "the request's RNG seed")->capture_default_str()
      ->check(seed_range());
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
  c->add_flag("--no-cuda-graphs", args->no_cuda_graphs,
              "--device gpu: launch every decode step kernel by kernel instead of replaying a "
              "captured CUDA graph (to compare)");
  add_tensor_parallel_flag(*c, args->tensor_parallel);
  c->add_option("--json", args->json, "also write the result as JSON to this path");
  return [args] { return run_generate(*args); };
}

}  // namespace nanoserve::cli
