// The suite registry, and the fill pattern and shape strings every suite uses.
#include <algorithm>
#include <string>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/dtype.cuh"

namespace nanoserve::bench {
namespace {

// A function-local static: suites register from other files' static initializers, whose order
// relative to this file is unspecified.
std::vector<Suite>& suites() {
  static std::vector<Suite> all;
  return all;
}

}  // namespace

bool register_suite(const std::string& name, int order, SuiteFactory make) {
  suites().push_back({name, order, make});
  return true;
}

std::vector<Suite> registered_suites() {
  std::vector<Suite> sorted = suites();
  std::sort(sorted.begin(), sorted.end(), [](const Suite& a, const Suite& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
  return sorted;
}

std::string dims(std::initializer_list<long long> sizes) {
  std::string s;
  for (long long n : sizes) s += (s.empty() ? "" : "x") + std::to_string(n);
  return s;
}

template <typename T>
std::vector<T> pattern(std::size_t n, unsigned salt) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned h = (static_cast<unsigned>(i) ^ salt) * 2654435761u;  // Knuth's hash
    v[i] = from_float<T>(static_cast<float>((h >> 8) & 0xFFFF) / 65536.0f - 0.5f + 1.0f / 131072);
  }
  return v;
}

template std::vector<float> pattern<float>(std::size_t, unsigned);
template std::vector<__half> pattern<__half>(std::size_t, unsigned);
template std::vector<__nv_bfloat16> pattern<__nv_bfloat16>(std::size_t, unsigned);

}  // namespace nanoserve::bench
