// bench_decode: end-to-end decode throughput of a whole model through the kernels (ModelRunner
// + paged KV + device sampling), at several batch sizes, each with the step replayed from a
// CUDA graph and launched kernel by kernel, beside the weight-streaming roofline measured in
// the same run (issue 9: "batch 1 >= 75% of the roofline; report batch 1, 8, 32, 128").
//
//   bench_decode --model synthetic:llama2-7b --dtype fp16 --batch 1,8,32,128 --json out.json
//   bench_decode --quick          (synthetic:tiny, small sizes: the simulator smoke run)
//
// Synthetic models of real shapes are generated tensor by tensor straight into device memory
// (DeviceModel's TensorSource), so a 7B model needs no 27 GB host copy. In the simulator the
// numbers are CPU timings and say nothing about a GPU; the program says so.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/bench_decode/decode_bench.h"
#include "common/engine/model/device_info.h"
#include "common/cli/program.h"
#include "common/error.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::bench {
namespace {

struct Args {
  std::string model = "synthetic:llama2-7b";
  std::string dtype = engine::default_dtype();  // bf16 on a GPU build, fp32 in the simulator
  std::string kv_dtype;                         // empty: --dtype
  std::vector<int> batches = {1, 8, 32, 128};
  int context = 512;
  int steps = 32;
  int warmup = 3;
  int block_size = 16;
  bool quick = false;
  std::string json;
};

/// The model on the device: a synthetic one generated tensor by tensor (`bundle` empty), or
/// the file's weights.
std::unique_ptr<engine::DeviceModel> load(const ModelConfig& config,
                                          const std::optional<ModelBundle>& bundle, DType dtype) {
  if (!bundle) {
    return std::make_unique<engine::DeviceModel>(
        config, dtype,
        engine::whole_tensor_source([&config](const std::string& name, int layer) {
          return synthetic_tensor(config, kDefaultSyntheticSeed, name, layer);
        }));
  }
  return std::make_unique<engine::DeviceModel>(bundle->model, dtype);
}

int run(Args args) {
  if (args.quick) {
    args.model = "synthetic:tiny";
    args.batches = {1, 4};
    args.context = 24;
    args.steps = 3;
    args.warmup = 1;
  }
  const DType dtype = parse_dtype(args.dtype);
  const DType kv_dtype = args.kv_dtype.empty() ? dtype : parse_dtype(args.kv_dtype);
  const std::string device = engine::device_name();
  std::printf("bench_decode  device: %s  git: %s\n", device.c_str(), git_sha().c_str());
  if (!NANOSERVE_REAL_CUDA) {
    std::printf("NOTE: CUDA simulator. These are CPU timings of the simulator, not GPU "
                "performance.\n");
  }
  // Everything the flags ask for is checked before anything is allocated: the context, and
  // the device memory of the weights, the largest batch's KV blocks and the copy buffers.
  std::optional<ModelBundle> bundle;  // host weights of a model file (none for synthetic)
  if (args.model.rfind("synthetic:", 0) != 0) bundle = load_model_bundle(args.model);
  const ModelConfig c = bundle ? bundle->model.config : synthetic_config(args.model);
  if (int64_t(args.context) + args.warmup + args.steps > c.max_seq_len) {
    throw InvalidArgument("--context " + std::to_string(args.context) + " + --warmup " +
                          std::to_string(args.warmup) + " + --steps " + std::to_string(args.steps) +
                          " must fit the model's context " + std::to_string(c.max_seq_len));
  }
  const std::size_t copy_bytes = args.quick ? (std::size_t(1) << 20) : (std::size_t(1) << 30);
  const int max_batch = *std::max_element(args.batches.begin(), args.batches.end());
  const double positions = double(max_batch) *
                           double((args.context + args.warmup + args.steps + args.block_size - 1) /
                                  args.block_size) * args.block_size;
  engine::check_device_memory(
      double(c.param_count()) * dtype_bytes(dtype) +
          positions * double(c.kv_bytes_per_token(dtype_bytes(kv_dtype))) +
          2.0 * double(copy_bytes),
      "--model " + args.model + " in " + dtype_name(dtype) + " (weights), --batch " +
          std::to_string(max_batch) + " x --context " + std::to_string(args.context) +
          " (KV) and the copy buffers");
  const auto model = load(c, bundle, dtype);
  const double gbs = copy_bandwidth_gbs(copy_bytes);
  std::printf("model %s (%s, KV %s), weights %.1f MiB; copy bandwidth %.1f GB/s\n\n",
              c.name.c_str(), dtype_name(dtype), dtype_name(kv_dtype),
              double(model->weight_bytes()) / (1 << 20), gbs);
  std::printf("%6s %8s %6s %7s %12s %12s %14s %10s %9s\n", "batch", "context", "steps",
              "graphs", "ms/step", "tokens/s", "roofline tok/s", "%roofline", "vs eager");

  nlohmann::json report = make_report("bench_decode", NANOSERVE_REAL_CUDA ? "cuda" : "sim", device);
  report["model"] = c.name;
  report["dtype"] = dtype_name(dtype);
  report["kv_dtype"] = dtype_name(kv_dtype);
  report["weight_bytes"] = model->weight_bytes();
  report["copy_gbs"] = gbs;
  for (int batch : args.batches) {
    double eager_tokens_per_s = 0;
    for (bool graphs : {false, true}) {  // the same steps launched kernel by kernel, then replayed
      const DecodeResult r = measure_decode(*model, kv_dtype, batch, args.context, args.steps,
                                            args.warmup, args.block_size, gbs, graphs);
      const double pct =
          r.roofline_tokens_per_s > 0 ? 100.0 * r.tokens_per_s / r.roofline_tokens_per_s : 0;
      if (!graphs) eager_tokens_per_s = r.tokens_per_s;
      const double vs_eager = eager_tokens_per_s > 0 ? r.tokens_per_s / eager_tokens_per_s : 0;
      std::printf("%6d %8d %6d %7s %12.3f %12.1f %14.1f %9.1f%% %8.2fx\n", r.batch, r.context,
                  r.steps, graphs ? "on" : "off", r.ms_per_step, r.tokens_per_s,
                  r.roofline_tokens_per_s, pct, vs_eager);
      report["records"].push_back({{"batch", r.batch},
                                   {"cuda_graphs", r.cuda_graphs},
                                   {"context", r.context},
                                   {"steps", r.steps},
                                   {"seconds", r.seconds},
                                   {"ms_per_step", r.ms_per_step},
                                   {"tokens_per_s", r.tokens_per_s},
                                   {"tokens_per_s_vs_eager", vs_eager},
                                   {"bytes_per_step", r.bytes_per_step},
                                   {"roofline_tokens_per_s", r.roofline_tokens_per_s},
                                   {"percent_of_roofline", pct}});
    }
  }
  if (!args.json.empty()) write_json(args.json, report);
  return 0;
}

}  // namespace
}  // namespace nanoserve::bench

int main(int argc, char** argv) {
  nanoserve::bench::Args args;
  CLI::App app{"bench_decode: end-to-end decode tokens/s vs the weight-streaming roofline"};
  CLI::Option* model = app.add_option("--model", args.model, "synthetic:<shape> or a model file")
                           ->capture_default_str();
  app.add_option("--dtype", args.dtype, "storage type of weights and activations")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", args.kv_dtype, "storage type of the KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  CLI::Option* batch = app.add_option("--batch", args.batches, "batch sizes")->delimiter(',')
                           ->capture_default_str()->check(CLI::Range(1, 4096));
  CLI::Option* context = app.add_option("--context", args.context, "positions each sequence holds")
                             ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  CLI::Option* steps = app.add_option("--steps", args.steps, "timed decode steps")
                           ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  CLI::Option* warmup = app.add_option("--warmup", args.warmup, "untimed steps first")
                            ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app.add_option("--block-size", args.block_size, "KV block size")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  // --quick sets the model and the sizes itself: combined with one of them it would silently
  // replace it, so the combination is refused instead.
  CLI::Option* quick = app.add_flag("--quick", args.quick,
                                    "synthetic:tiny, batches 1,4, context 24, 3 steps, 1 warmup "
                                    "(simulator smoke run; excludes the flags it sets)");
  for (CLI::Option* o : {model, batch, context, steps, warmup}) quick->excludes(o);
  app.add_option("--json", args.json, "write the results here");
  return nanoserve::cli::run_program("bench_decode", app, argc, argv,
                                     [&] { return nanoserve::bench::run(args); });
}
