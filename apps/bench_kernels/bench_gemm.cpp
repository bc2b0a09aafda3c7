// GEMM cases: every version on a 512-token prefill through a 4096x4096 projection in fp16, v03
// on the MLP shape and in fp32; and the launch_linear sweep over 1..64 rows that shows where
// GEMV and GEMM cross (the kLinearGemvMaxRows threshold, kernels/linear.h).
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "apps/bench_kernels/bench_linear.h"
#include "kernels/gemm.h"
#include "kernels/gemv.h"
#include "kernels/linear.h"

namespace nanoserve::bench {
namespace {

std::string mnk(int m, int n, int k) {
  return "m" + std::to_string(m) + " " + std::to_string(n) + "x" + std::to_string(k);
}

template <typename T>
BenchCase gemm_case(int version, int m, int n, int k) {
  return linear_case<T>(
      "gemm", "v0" + std::to_string(version), m, n, k, mnk(m, n, k),
      [version](const T* w, const float* x, float* y, int mm, int nn, int kk, cudaStream_t s) {
        launch_gemm_version(version, w, x, y, mm, nn, kk, s);
      });
}

// The same linear layer three ways: GEMV v03, GEMM v03 and launch_linear's choice.
template <typename T>
void add_linear_sweep(std::vector<BenchCase>& cases, int m, int n, int k) {
  cases.push_back(linear_case<T>(
      "linear", "gemv-v03", m, n, k, mnk(m, n, k),
      [](const T* w, const float* x, float* y, int mm, int nn, int kk, cudaStream_t s) {
        launch_gemv_v03(w, x, y, mm, nn, kk, s);
      }));
  cases.push_back(linear_case<T>(
      "linear", "gemm-v03", m, n, k, mnk(m, n, k),
      [](const T* w, const float* x, float* y, int mm, int nn, int kk, cudaStream_t s) {
        launch_gemm_v03(w, x, y, mm, nn, kk, s);
      }));
  cases.push_back(linear_case<T>(
      "linear", "auto", m, n, k, mnk(m, n, k),
      [](const T* w, const float* x, float* y, int mm, int nn, int kk, cudaStream_t s) {
        launch_linear(w, x, y, mm, nn, kk, s);
      }));
}

std::vector<BenchCase> gemm_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  if (options.quick) {
    for (int v = 1; v <= kGemmVersions; ++v) {
      cases.push_back(gemm_case<__half>(v, 64, 64, 64));
      cases.push_back(gemm_case<float>(v, 33, 65, 47));  // partial tiles everywhere
    }
    return cases;
  }
  for (int v = 1; v <= kGemmVersions; ++v) cases.push_back(gemm_case<__half>(v, 512, 4096, 4096));
  cases.push_back(gemm_case<__half>(3, 512, 11008, 4096));
  cases.push_back(gemm_case<float>(3, 512, 4096, 4096));
  return cases;
}

std::vector<BenchCase> linear_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  if (options.quick) {
    for (int m : {1, kLinearGemvMaxRows + 1}) add_linear_sweep<__half>(cases, m, 64, 64);
    return cases;
  }
  for (int m : {1, 4, 8, 16, 32, 64}) add_linear_sweep<__half>(cases, m, 4096, 4096);
  return cases;
}

const bool kGemmRegistered = register_suite("gemm", 20, gemm_cases);
const bool kLinearRegistered = register_suite("linear", 30, linear_cases);

}  // namespace
}  // namespace nanoserve::bench
