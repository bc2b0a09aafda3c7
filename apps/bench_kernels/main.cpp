// bench_kernels: times every registered kernel case (bench_<kernel>.cpp files) with CUDA events,
// L2 flushed between repetitions, and reports ms, GB/s, GFLOP/s and % of the measured
// device-to-device copy bandwidth. In the simulator it runs the same cases and says that its
// timings are CPU timings.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "apps/bench_kernels/bench_report.h"
#include "apps/bench_kernels/bench_timer.h"
#include "common/cli/cli_checks.h"
#include "common/cli/program.h"
#include "common/io/output_file.h"
#include "common/report.h"
#include "kernels/dtype.cuh"

#ifndef NANOSERVE_GIT_SHA
#define NANOSERVE_GIT_SHA "unknown"
#endif

namespace nanoserve::bench {
namespace {

struct Args {
  bool quick = false;
  bool list = false;
  std::vector<std::string> kernels;
  std::vector<std::string> dtypes;
  TimingOptions timing;
  std::string json_path;
};

RunInfo run_info(std::size_t flush_bytes) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return {NANOSERVE_REAL_CUDA ? "cuda" : "sim", prop.name, git_sha(), git_dirty(), flush_bytes};
}

bool selected(const std::vector<std::string>& filter, const std::string& value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

int run(const Args& args) {
  const SuiteOptions suite_options{args.quick};
  const std::vector<Suite> suites = registered_suites();
  std::set<std::string> names;
  for (const Suite& s : suites) names.insert(s.name);
  for (const std::string& k : args.kernels) {
    if (names.count(k) == 0) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw std::invalid_argument("--kernel " + k + ": no such benchmark (known: " + known + ")");
    }
  }

  std::vector<std::string> dtypes;  // canonical names ("half" -> "fp16"); throws if unknown
  for (const std::string& d : args.dtypes) dtypes.push_back(dtype_name(parse_dtype(d)));
  if (!args.json_path.empty() && !args.list) check_output_path(args.json_path);  // fail now, not after the run

  // The copy rows always run: they are the 100% of the %copy column.
  std::vector<BenchCase> cases;
  for (const Suite& s : suites) {
    for (BenchCase& c : s.make(suite_options)) {
      if (c.bandwidth_reference ||
          (selected(args.kernels, c.kernel) && selected(dtypes, c.dtype))) {
        cases.push_back(std::move(c));
      }
    }
  }
  if (args.list) {
    print_case_list(stdout, cases);
    return 0;
  }

  BenchTimer timer;
  const RunInfo info = run_info(timer.flush_bytes());
  const bool progress = isatty(fileno(stderr)) != 0;
  std::vector<ResultRow> rows;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    if (progress) {
      std::fprintf(stderr, "\r[%zu/%zu] %s %s %s %s\033[K", i + 1, cases.size(), c.kernel.c_str(),
                   c.version.c_str(), c.dtype.c_str(), c.shape.c_str());
    }
    Timing timing;
    {
      const Launch launch = c.prepare();  // buffers live until the case is timed
      timing = timer.time(launch, args.timing);
    }
    rows.push_back({c, timing, 0.0, 0.0, 0.0});
    rows.back().what.prepare = nullptr;
  }
  if (progress) std::fprintf(stderr, "\r\033[K");

  const double copy_gbps = compute_rates(rows);
  print_table(stdout, info, copy_gbps, rows);
  if (!args.json_path.empty()) write_json(args.json_path, info, rows);
  return 0;
}

}  // namespace
}  // namespace nanoserve::bench

int main(int argc, char** argv) {
  using nanoserve::bench::Args;
  namespace cli = nanoserve::cli;
  Args args;
  CLI::App app{
      "bench_kernels: time every kernel version (CUDA events, L2 flushed, median) and report "
      "GB/s, GFLOP/s and % of the measured device-to-device copy bandwidth"};
  app.add_flag("--quick", args.quick, "small sizes and few repetitions (simulator, CI smoke)");
  app.add_flag("--list", args.list, "list the selected cases without running them");
  std::string families;  // the suites registered by the bench_<kernel>.cpp files
  for (const nanoserve::bench::Suite& s : nanoserve::bench::registered_suites()) {
    families += (families.empty() ? "" : ", ") + s.name;
  }
  app.add_option("--kernel", args.kernels, "only these kernel families (" + families + ")");
  app.add_option("--dtype", args.dtypes, "only these storage types (fp32, fp16, bf16)");
  app.add_option("--reps", args.timing.reps, "timed repetitions per case")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--warmup", args.timing.warmup, "untimed launches before timing")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--max-seconds", args.timing.max_seconds,
                 "stop repeating a case (after 3 reps) once its timed total exceeds this")
      ->check(cli::number_in(1e-3, 1e6))  // CLI::Range lets "nan" through
      ->capture_default_str();
  app.add_option("--json", args.json_path, "also write one JSON record per row to this file");
  return cli::run_program("bench_kernels", app, argc, argv, [&] {
    if (args.quick) {
      // Explicit --reps/--warmup still win.
      if (app.count("--reps") == 0) args.timing.reps = 3;
      if (app.count("--warmup") == 0) args.timing.warmup = 1;
    }
    return nanoserve::bench::run(args);
  });
}
