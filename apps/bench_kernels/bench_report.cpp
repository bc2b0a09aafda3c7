// Table and JSON output of bench_kernels.
#include "apps/bench_kernels/bench_report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "common/io/output_file.h"

namespace nanoserve::bench {
namespace {

// Widths of the identity columns: the longest kernel name, version and shape of the cases
// (never narrower than the header word), so that every row lines up whatever was selected.
struct ColumnWidths {
  int kernel = 6;
  int version = 7;
  int shape = 5;
};

ColumnWidths widths_of(const std::vector<const BenchCase*>& cases) {
  ColumnWidths w;
  for (const BenchCase* c : cases) {
    w.kernel = std::max(w.kernel, static_cast<int>(c->kernel.size()));
    w.version = std::max(w.version, static_cast<int>(c->version.size()));
    w.shape = std::max(w.shape, static_cast<int>(c->shape.size()));
  }
  return w;
}

}  // namespace

void print_case_list(std::FILE* out, const std::vector<BenchCase>& cases) {
  std::vector<const BenchCase*> all;
  for (const BenchCase& c : cases) all.push_back(&c);
  const ColumnWidths w = widths_of(all);
  for (const BenchCase& c : cases) {
    std::fprintf(out, "%-*s %-*s %-6s %s\n", w.kernel, c.kernel.c_str(), w.version,
                 c.version.c_str(), c.dtype.c_str(), c.shape.c_str());
  }
}

double compute_rates(std::vector<ResultRow>& rows) {
  double copy_gbps = 0.0;
  for (ResultRow& r : rows) {
    const double seconds = r.timing.median_ms * 1e-3;
    r.gbps = seconds > 0.0 ? r.what.bytes / seconds * 1e-9 : 0.0;
    r.gflops = seconds > 0.0 ? r.what.flops / seconds * 1e-9 : 0.0;
    if (r.what.bandwidth_reference) copy_gbps = std::max(copy_gbps, r.gbps);
  }
  for (ResultRow& r : rows) r.pct_of_copy_bw = copy_gbps > 0.0 ? 100.0 * r.gbps / copy_gbps : 0.0;
  for (const ResultRow& ref : rows) {
    if (!ref.what.flops_reference || ref.gflops <= 0.0) continue;
    for (ResultRow& r : rows) {
      if (&r != &ref && r.what.kernel == ref.what.kernel && r.what.dtype == ref.what.dtype &&
          r.what.shape == ref.what.shape) {
        r.pct_of_reference = 100.0 * r.gflops / ref.gflops;
        r.reference = ref.what.version;
      }
    }
  }
  return copy_gbps;
}

void print_table(std::FILE* out, const RunInfo& info, double copy_gbps,
                 const std::vector<ResultRow>& rows) {
  std::fprintf(out, "bench_kernels  device: %s  backend: %s  git: %s%s\n", info.device.c_str(),
               info.backend.c_str(), info.git_sha.c_str(), info.git_dirty ? " (dirty)" : "");
  if (info.backend == "sim") {
    std::fprintf(out,
                 "NOTE: CUDA simulator. These are CPU timings of the simulator running the kernels "
                 "on fibers,\n      not GPU performance; use them only to see that every case "
                 "runs.\n");
  }
  if (info.l2_flush_bytes > 0) {
    std::fprintf(out, "L2 flushed before every repetition (%.1f MB written); median of reps.\n",
                 info.l2_flush_bytes / 1e6);
  } else {
    std::fprintf(out, "The device reports no L2 cache: no flush between repetitions; median.\n");
  }
  std::fprintf(out, "%%copy: GB/s relative to the fastest device-to-device copy (%.1f GB/s).\n\n",
               copy_gbps);
  std::vector<const BenchCase*> cases;
  for (const ResultRow& r : rows) cases.push_back(&r.what);
  const ColumnWidths w = widths_of(cases);
  std::fprintf(out, "%-*s %-*s %-6s %-*s %11s %5s %10s %10s %7s\n", w.kernel, "kernel",
               w.version, "version", "dtype", w.shape, "shape", "ms", "reps", "GB/s", "GFLOP/s",
               "%copy");
  for (const ResultRow& r : rows) {
    std::fprintf(out, "%-*s %-*s %-6s %-*s %11.5f %5d %10.1f %10.1f %6.1f%%\n", w.kernel,
                 r.what.kernel.c_str(), w.version, r.what.version.c_str(), r.what.dtype.c_str(),
                 w.shape, r.what.shape.c_str(), r.timing.median_ms, r.timing.reps, r.gbps,
                 r.gflops, r.pct_of_copy_bw);
  }
  // The vendor-library comparison (cuBLAS for gemm_tc), only where a reference row ran.
  bool header = false;
  for (const ResultRow& r : rows) {
    if (r.reference.empty()) continue;
    if (!header) {
      std::fprintf(out, "\nGFLOP/s relative to the vendor library on the same shape and dtype:\n");
      header = true;
    }
    std::fprintf(out, "%-*s %-*s %-6s %-*s %6.1f%% of %s\n", w.kernel, r.what.kernel.c_str(),
                 w.version, r.what.version.c_str(), r.what.dtype.c_str(), w.shape,
                 r.what.shape.c_str(), r.pct_of_reference, r.reference.c_str());
  }
}

void write_json(const std::string& path, const RunInfo& info, const std::vector<ResultRow>& rows) {
  // ordered_json keeps the fields in the order written here (identity first, then metrics).
  nlohmann::ordered_json records = nlohmann::ordered_json::array();
  for (const ResultRow& r : rows) {
    records.push_back({{"kernel", r.what.kernel},
                       {"version", r.what.version},
                       {"dtype", r.what.dtype},
                       {"shape", r.what.shape},
                       {"ms", r.timing.median_ms},
                       {"min_ms", r.timing.min_ms},
                       {"reps", r.timing.reps},
                       {"bytes", r.what.bytes},
                       {"flops", r.what.flops},
                       {"gbps", r.gbps},
                       {"gflops", r.gflops},
                       {"pct_of_copy_bw", r.pct_of_copy_bw},
                       {"pct_of_reference", r.pct_of_reference},
                       {"reference", r.reference},
                       {"l2_flush_bytes", info.l2_flush_bytes},
                       {"backend", info.backend},
                       {"device", info.device},
                       {"git_sha", info.git_sha},
                       {"git_dirty", info.git_dirty}});
  }
  write_output_file(path, records.dump(2) + "\n");
}

}  // namespace nanoserve::bench
