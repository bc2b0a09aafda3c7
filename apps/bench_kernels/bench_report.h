#pragma once
/// \file
/// \brief The results of `bench_kernels`: a fixed-width table on stdout and, with `--json`, one
/// JSON record per row (docs/design.md, "Results").

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "apps/bench_kernels/bench_timer.h"

namespace nanoserve::bench {

/// \brief Where the numbers come from.
struct RunInfo {
  std::string backend;              ///< "cuda" (a GPU) or "sim" (the CPU simulator)
  std::string device;               ///< cudaDeviceProp::name
  std::string git_sha;              ///< the source version measured
  bool git_dirty = true;            ///< the tree had changes git_sha lacks (or not known)
  std::size_t l2_flush_bytes = 0;   ///< bytes written before each repetition (0: no flush)
};

/// \brief One measured case.
struct ResultRow {
  BenchCase what;                ///< the case (its `prepare` is not used any more)
  Timing timing;                 ///< its timing
  double gbps = 0.0;             ///< what.bytes / median time, in 1e9 bytes per second
  double gflops = 0.0;           ///< what.flops / median time, in 1e9 FLOP per second
  double pct_of_copy_bw = 0.0;   ///< gbps as a percentage of the fastest copy row
  /// \brief gflops as a percentage of the flops_reference row of the same kernel, dtype and
  /// shape (0 when there is none).
  double pct_of_reference = 0.0;
  std::string reference{};       ///< that reference row's version ("cublas"), or empty
};

/// \brief Prints one line per case (kernel, version, dtype, shape) without running it
/// (`--list`).
void print_case_list(std::FILE* out, const std::vector<BenchCase>& cases);

/// \brief Fills `gbps`, `gflops`, `pct_of_copy_bw` and `pct_of_reference` of every row; returns
/// the copy bandwidth used as 100% (0 when no copy row was measured).
double compute_rates(std::vector<ResultRow>& rows);

/// \brief Prints the table (and, for the simulator, that its timings are CPU timings).
void print_table(std::FILE* out, const RunInfo& info, double copy_gbps,
                 const std::vector<ResultRow>& rows);

/// \brief Writes a JSON array with one object per row to `path`; throws std::runtime_error
/// naming the path when it cannot be written.
void write_json(const std::string& path, const RunInfo& info, const std::vector<ResultRow>& rows);

}  // namespace nanoserve::bench
