#pragma once
/// \file
/// \brief The benchmark registry of `bench_kernels`: each kernel family contributes a suite (a
/// function returning its cases) from its own `bench_<kernel>.cpp`, registered by a static
/// initializer — adding a kernel to the benchmark means adding one file:
/// ```
/// // apps/bench_kernels/bench_rmsnorm.cpp
/// namespace nanoserve::bench {
/// namespace {
/// std::vector<BenchCase> rmsnorm_cases(const SuiteOptions& options) {
///   BenchCase c{"rmsnorm", "v01", "fp16", "4096 x 1", /*bytes=*/..., /*flops=*/..., false, {}};
///   c.prepare = [] () -> Launch {
///     auto buffers = std::make_shared<...>();            // allocate and fill inputs here
///     return [buffers](cudaStream_t s) { launch_rmsnorm(..., s); };
///   };
///   return {c};                                          // small sizes when options.quick
/// }
/// const bool kRegistered = register_suite("rmsnorm", 50, rmsnorm_cases);
/// }  // namespace
/// }  // namespace nanoserve::bench
/// ```
/// `bytes` is the least traffic the kernel must cause (inputs read once, outputs written once):
/// GB/s and %copy are computed from it.

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/cuda_compat.h"

namespace nanoserve::bench {

/// \brief One prepared benchmark: launches the kernel once on the given stream. It owns the
/// device buffers it uses (freed when it is destroyed).
using Launch = std::function<void(cudaStream_t)>;

/// \brief One row of the benchmark table: a kernel version on one dtype and shape.
struct BenchCase {
  std::string kernel;   ///< kernel family ("gemv", "gemm", "copy", …)
  std::string version;  ///< "v01", "v02", …, or a variant name ("cudaMemcpy", "auto")
  /// \brief Storage type the kernel is instantiated for ("fp16", …): of the data that dominates
  /// traffic for GEMV/GEMM/attention (weights, KV cache), of the table, gain or cache for the
  /// other templated kernels; "fp32" for kernels that only touch fp32 activations.
  std::string dtype;
  std::string shape;    ///< human-readable sizes ("4096x4096 b1")
  double bytes = 0.0;   ///< bytes the kernel must move at least (inputs read + outputs written)
  double flops = 0.0;   ///< floating-point operations (a multiply-add counts 2)
  /// \brief A device-to-device copy: its bandwidth defines 100% in the `%copy` column.
  bool bandwidth_reference = false;
  /// \brief Allocates and fills the inputs (only when the case is run), returns the launch.
  std::function<Launch()> prepare;
  /// \brief A vendor library's run of a kernel family's problem (cuBLAS for `gemm_tc`): the
  /// other rows of the same kernel, dtype and shape also get their GFLOP/s relative to it.
  /// Last, so that positional initializers like the one above may leave it out.
  bool flops_reference = false;
};

/// \brief What a suite may vary its cases by.
struct SuiteOptions {
  bool quick = false;  ///< small sizes: simulator runs and the ctest smoke run
};

/// \brief A kernel family's cases for the given options.
using SuiteFactory = std::vector<BenchCase> (*)(const SuiteOptions&);

/// \brief A registered suite.
struct Suite {
  std::string name;     ///< kernel family name, as `--kernel` selects it
  int order = 0;        ///< table position (copy first, then by increasing order)
  SuiteFactory make;    ///< builds the cases
};

/// \brief Registers a suite (call from a namespace-scope initializer); returns true.
bool register_suite(const std::string& name, int order, SuiteFactory make);

/// \brief Every registered suite, sorted by `order` then name.
std::vector<Suite> registered_suites();

/// \brief `n` deterministic, finite, non-zero values in [-0.5, 0.5) in storage type T
/// (timing does not depend on the values; a cheap hash keeps 100M-element fills fast and avoids
/// all-zero data that a GPU could compress).
template <typename T>
std::vector<T> pattern(std::size_t n, unsigned salt);

/// \brief Sizes joined by 'x' for the shape column: `dims({512, 4096})` is "512x4096".
std::string dims(std::initializer_list<long long> sizes);

}  // namespace nanoserve::bench
