// GEMV cases: every version on the decode shapes of Llama-2-7B / Llama-3-8B in fp16 at batch 1
// (the case that decides decode speed: pure weight streaming), the other dtypes on one shape,
// and v03 over batches 2..16 (where it stops being bandwidth-bound).
#include <string>
#include <utility>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "apps/bench_kernels/bench_linear.h"
#include "kernels/gemv.h"

namespace nanoserve::bench {
namespace {

template <typename T>
BenchCase gemv_case(int version, int batch, int out_dim, int in_dim) {
  return linear_case<T>(
      "gemv", "v0" + std::to_string(version), batch, out_dim, in_dim,
      std::to_string(out_dim) + "x" + std::to_string(in_dim) + " b" + std::to_string(batch),
      [version](const T* w, const float* x, float* y, int m, int n, int k, cudaStream_t s) {
        launch_gemv_version(version, w, x, y, m, n, k, s);
      });
}

std::vector<BenchCase> gemv_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  if (options.quick) {
    for (int v = 1; v <= kGemvVersions; ++v) {
      cases.push_back(gemv_case<float>(v, 1, 256, 256));
      cases.push_back(gemv_case<__half>(v, 1, 256, 256));
      cases.push_back(gemv_case<__nv_bfloat16>(v, 1, 256, 256));
      cases.push_back(gemv_case<__half>(v, 3, 255, 257));  // v03's one-element-load fallback
    }
    return cases;
  }
  // (out_dim, in_dim): Llama-2-7B's attention projections (4096x4096) and MLP up/gate
  // (11008x4096); Llama-3-8B's MLP up/gate (14336x4096) and down (4096x14336).
  const std::vector<std::pair<int, int>> shapes = {
      {4096, 4096}, {11008, 4096}, {14336, 4096}, {4096, 14336}};
  for (const auto& [out_dim, in_dim] : shapes) {
    for (int v = 1; v <= kGemvVersions; ++v) {
      cases.push_back(gemv_case<__half>(v, 1, out_dim, in_dim));
    }
  }
  for (int v = 1; v <= kGemvVersions; ++v) {
    cases.push_back(gemv_case<float>(v, 1, 4096, 4096));
    cases.push_back(gemv_case<__nv_bfloat16>(v, 1, 4096, 4096));
  }
  for (int batch : {2, 4, 8, 16}) cases.push_back(gemv_case<__half>(3, batch, 4096, 4096));
  return cases;
}

const bool kRegistered = register_suite("gemv", 10, gemv_cases);

}  // namespace
}  // namespace nanoserve::bench
