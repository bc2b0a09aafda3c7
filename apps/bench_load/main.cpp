// bench_load: host memory of loading a checkpoint onto the device, the way `nanoserve
// generate/serve/chat --device gpu` loads it (HfCheckpointReader / GgufCheckpointReader →
// DeviceModel, range by range; GGUF Q4_0/Q8_0/Q4_K linears uploaded packed).
//
//   bench_load                          synthetic:llama3-8b (8.0B parameters) in both formats:
//                                       HF safetensors bf16 (16 GB) and GGUF Q4_0 (4.5 GB),
//                                       written to --dir first if absent (minutes, once)
//   bench_load --quick                  synthetic:small, both formats (the CI smoke test)
//
// Each load runs in a forked child whose peak resident memory is read from the kernel
// (common/peak_memory.h). On the simulator the device is host memory too, so the figure that
// matters is the peak minus the device memory in use after the load: what loading costs the host.
// Prints a table and writes --json.
#include <CLI/CLI.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_load/checkpoint_writers.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/gguf_device_model.h"
#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/synthetic_model.h"
#include "common/peak_memory.h"
#include "common/report.h"

namespace nanoserve {
namespace {

struct Args {
  std::string model = "synthetic:llama3-8b";
  std::string dir;
  std::string dtype = "bf16";
  bool quick = false;
  bool keep = false;
  std::string json;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(Args a) {
  if (a.quick) a.model = "synthetic:small";
  const ModelConfig config = synthetic_config(a.model);
  const DType dtype = parse_dtype(a.dtype);
  namespace fs = std::filesystem;
  const std::string dir =
      (a.dir.empty() ? fs::temp_directory_path() / "nanoserve-bench-load" : fs::path(a.dir)) /
      config.name.substr(config.name.find(':') + 1);
  fs::create_directories(dir);
  std::printf("bench_load  device: %s  git: %s\n", engine::device_name().c_str(), git_sha().c_str());
  std::printf("model %s: %.2fB parameters, dtype %s, files in %s\n", a.model.c_str(),
              double(config.param_count()) / 1e9, a.dtype.c_str(), dir.c_str());

  const std::string hf_dir = dir + "/hf-bf16";
  const std::string gguf_path = dir + "/model-q4_0.gguf";
  if (!fs::exists(hf_dir + "/model.safetensors")) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::int64_t n = bench::write_hf_bf16(config, kDefaultSyntheticSeed, hf_dir);
    std::printf("wrote %s: %.2f GB in %.0f s\n", hf_dir.c_str(), double(n) / 1e9, seconds_since(t0));
  }
  if (!fs::exists(gguf_path)) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::int64_t n = bench::write_gguf_q4_0(config, kDefaultSyntheticSeed, gguf_path);
    std::printf("wrote %s: %.2f GB in %.0f s\n", gguf_path.c_str(), double(n) / 1e9, seconds_since(t0));
  }

  // What a load leaves on the device: its weights, and all device memory in use (weights plus
  // the GGUF layers' GEMM scratch), from cudaMemGetInfo before and after.
  auto device_used = [] {
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return static_cast<std::int64_t>(total - free);
  };
  auto measured = [&](auto load) -> PeakMemoryWork {
    return [&device_used, load] {
      const std::int64_t before = device_used();
      const std::unique_ptr<engine::DeviceModel> m = load();
      return std::array<std::int64_t, 4>{m->weight_bytes(), device_used() - before, 0, 0};
    };
  };
  struct Case {
    const char* format;
    std::string path;
    PeakMemoryWork load;
  };
  const std::vector<Case> cases = {
      {"hf-bf16", hf_dir, measured([&] {
         const HfCheckpointReader r(hf_dir);
         return std::make_unique<engine::DeviceModel>(
             r.config(), dtype, [&r](const std::string& f, int l, std::size_t o, std::size_t n) {
               return r.read(f, l, o, n);
             });
       })},
      {"gguf-q4_0", gguf_path, measured([&] {
         const GgufCheckpointReader r(gguf_path);
         return std::make_unique<engine::DeviceModel>(engine::make_gguf_device_model(r, dtype));
       })}};

  nlohmann::json report = make_report("bench_load", NANOSERVE_REAL_CUDA ? "cuda" : "sim", engine::device_name());
  std::printf("\n%-10s %9s %10s %10s %11s %13s %7s\n", "format", "file MB", "weights MB",
              "device MB", "peak RSS MB", "host peak MB", "load s");
  int failures = 0;
  for (const Case& c : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const PeakMemory p = measure_peak_memory(c.load);
    const double secs = seconds_since(t0);
    std::uintmax_t file = 0;
    for (const auto& e : fs::recursive_directory_iterator(fs::path(c.path).parent_path())) {
      if (e.is_regular_file() && e.path().string().rfind(c.path, 0) == 0) file += e.file_size();
    }
    if (!p.ok || !p.error.empty()) {
      std::printf("%-10s failed: %s\n", c.format, p.ok ? p.error.c_str() : "could not measure");
      ++failures;
      continue;
    }
    const std::int64_t weights = p.reported[0], device = p.reported[1];
    const std::int64_t host = NANOSERVE_REAL_CUDA ? p.peak_bytes : p.peak_bytes - device;
    std::printf("%-10s %9.0f %10.0f %10.0f %11.0f %13.0f %7.1f\n", c.format, double(file) / 1e6,
                double(weights) / 1e6, double(device) / 1e6, double(p.peak_bytes) / 1e6,
                double(host) / 1e6, secs);
    report["records"].push_back({{"model", a.model},
                                 {"format", c.format},
                                 {"dtype", a.dtype},
                                 {"parameters", config.param_count()},
                                 {"file_bytes", file},
                                 {"device_weight_bytes", weights},
                                 {"device_bytes", device},
                                 {"peak_rss_bytes", p.peak_bytes},
                                 {"host_peak_bytes", host},
                                 {"load_seconds", secs}});
  }
  std::printf(NANOSERVE_REAL_CUDA
                  ? "\nmeasured on the GPU above: host peak = the process's peak resident memory\n"
                  : "\nsimulated: device memory is host memory here, so host peak = peak resident "
                    "memory - device memory in use after the load\n");
  if (!a.json.empty()) write_json(a.json, report);
  if (!a.keep && a.quick) fs::remove_all(dir);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace nanoserve

int main(int argc, char** argv) {
  nanoserve::Args a;
  CLI::App app{"bench_load: host memory of loading a checkpoint onto the device"};
  app.add_option("--model", a.model, "synthetic model whose shape is written and loaded");
  app.add_option("--dir", a.dir, "where the checkpoints are written (kept for the next run)");
  app.add_option("--dtype", a.dtype, "device storage type")->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_flag("--quick", a.quick, "synthetic:small (the smoke test), files removed afterwards");
  app.add_flag("--keep", a.keep, "keep the --quick files");
  app.add_option("--json", a.json, "write the results as JSON here");
  CLI11_PARSE(app, argc, argv);
  try {
    return nanoserve::run(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_load: %s\n", e.what());
    return 1;
  }
}
