// Tensor-core GEMM (launch_gemm_tc, Y = X Wᵀ with X and W in fp16/bf16): every version, output in
// fp32 and in the input type, both epilogues, against oracle::matmul on the same rounded inputs
// over awkward sizes (partial 64x64x32 tiles in every dimension, k not a multiple of 8,
// misaligned rows); an exact case that pins the orientation (X = I gives Y = Wᵀ); the argument
// checks. Suites are named Wmma* so that they also run under the simulator's permuted
// element-to-lane mapping (tests/CMakeAreas.cmake).
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/allclose.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/gemm_tc.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/gemm_tc_test_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::TypePair;
using testing::TypePairNames;
using TypePairs = testing::GemmTcTypePairs;
using testing::gemm_tc_output_tolerance;

// A seeded problem with X and W in T (rounded once, the oracle multiplies the same rounded
// values) and Y in OutT followed by a guard zone. W ~ U(-1, 1)/sqrt(k), X ~ U(-1, 1): outputs
// O(1). A kStore Y starts as NaN, so an output the kernel misses stays NaN.
template <typename T, typename OutT>
struct Problem {
  static constexpr std::size_t kGuard = 67;
  static constexpr float kGuardValue = 1024.0f;  // exact in every type

  Problem(int m_, int n_, int k_, Epilogue epilogue_, std::uint64_t seed, int x_offset = 0)
      : m(m_), n(n_), k(k_), epilogue(epilogue_), offset(x_offset) {
    const float w_scale = 1.0f / std::sqrt(static_cast<float>(k > 0 ? k : 1));
    const std::vector<T> w = testing::to_storage<T>(
        testing::random_values(seed, 0, static_cast<std::size_t>(n) * k, w_scale));
    std::vector<T> x = testing::to_storage<T>(
        testing::random_values(seed, 1, static_cast<std::size_t>(m) * k, 1.0f));
    wf = testing::to_floats(w);
    xf = testing::to_floats(x);
    const std::size_t y_size = static_cast<std::size_t>(m) * n;
    std::vector<OutT> y = testing::to_storage<OutT>(
        epilogue == Epilogue::kAccumulate
            ? testing::random_values(seed, 2, y_size, 1.0f)
            : std::vector<float>(y_size, std::numeric_limits<float>::quiet_NaN()));
    y_initial = testing::to_floats(y);
    y.resize(y_size + kGuard, from_float<OutT>(kGuardValue));
    x.insert(x.begin(), static_cast<std::size_t>(offset), from_float<T>(0.0f));
    dw = DeviceBuffer<T>(w);
    dx = DeviceBuffer<T>(x);
    dy = DeviceBuffer<OutT>(y);
  }

  const T* x_ptr() const { return dx.get() + offset; }

  void run(int version) const {
    launch_gemm_tc(dw.get(), x_ptr(), dy.get(), m, n, k, nullptr, epilogue, version);
  }

  std::vector<float> reference() const {
    std::vector<float> want(static_cast<std::size_t>(m) * n);
    oracle::matmul(xf.data(), wf.data(), m, k, n, want.data());
    if (epilogue == Epilogue::kAccumulate) {
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += y_initial[i];
    }
    return want;
  }

  // Y from the device as fp32; adds a failure if anything past its end was written.
  std::vector<float> result() const {
    std::vector<float> y = testing::to_floats(dy.to_host());
    const std::size_t y_size = static_cast<std::size_t>(m) * n;
    for (std::size_t i = y_size; i < y.size(); ++i) {
      if (y[i] != kGuardValue) {
        ADD_FAILURE() << "wrote past the end of Y (" << m << "x" << n << ") at guard element "
                      << i - y_size;
        break;
      }
    }
    y.resize(y_size);
    return y;
  }

  int m, n, k;
  Epilogue epilogue;
  int offset;                    // elements of X's buffer before X (misaligns its rows)
  std::vector<float> wf;         // (n, k) W as fp32 (exact)
  std::vector<float> xf;         // (m, k) X as fp32 (exact)
  std::vector<float> y_initial;  // (m, n) Y before the launch, as fp32
  DeviceBuffer<T> dw;            // (n, k)
  DeviceBuffer<T> dx;            // (offset + m * k)
  DeviceBuffer<OutT> dy;         // (m * n + kGuard)
};

template <typename P>
void expect_matches_oracle(int version, int m, int n, int k, Epilogue epilogue,
                           std::uint64_t seed, int x_offset = 0) {
  const Problem<typename P::T, typename P::OutT> p(m, n, k, epilogue, seed, x_offset);
  p.run(version);
  const CloseResult r =
      allclose(p.result(), p.reference(), gemm_tc_output_tolerance<typename P::OutT>());
  EXPECT_TRUE(r.ok) << "v0" << version << " " << TypePairNames::GetName<P>(0) << " m=" << m
                    << " n=" << n << " k=" << k
                    << (epilogue == Epilogue::kAccumulate ? " accumulate" : "")
                    << (x_offset != 0 ? " misaligned x" : "") << ": " << r.summary();
}

template <typename P>
class WmmaGemmTc : public testing::DeviceTest {};
TYPED_TEST_SUITE(WmmaGemmTc, TypePairs, TypePairNames);

TYPED_TEST(WmmaGemmTc, EveryVersionMatchesOracleOnAwkwardSizes) {
  // Around the 64 x 64 x 32 block tile (v02, v03) and the 16 x 16 x 16 fragment (v01, which
  // runs only the multiples of 16): single elements, partial tiles, exact tiles, one past a
  // tile in every dimension, k not a multiple of 8 (no 16-byte copies), k much longer than a
  // tile.
  const std::vector<std::tuple<int, int, int>> shapes = {
      {1, 1, 1},    {17, 33, 40},  {16, 16, 16}, {64, 64, 64},  {65, 63, 17},
      {3, 129, 72}, {48, 80, 112}, {70, 17, 33}, {33, 5, 1001}, {128, 64, 96}};
  for (int version = 1; version <= kGemmTcVersions; ++version) {
    for (const auto& [m, n, k] : shapes) {
      if (version == 1 && !(m % 16 == 0 && n % 16 == 0 && k % 16 == 0)) continue;
      expect_matches_oracle<TypeParam>(version, m, n, k, Epilogue::kStore,
                                       100 * version + m + n + k);
    }
  }
}

TYPED_TEST(WmmaGemmTc, EveryVersionAccumulatesIntoY) {
  for (int version = 1; version <= kGemmTcVersions; ++version) {
    expect_matches_oracle<TypeParam>(version, 32, 48, 64, Epilogue::kAccumulate, 7 + version);
    if (version > 1) {
      expect_matches_oracle<TypeParam>(version, 37, 70, 41, Epilogue::kAccumulate, 9 + version);
    }
  }
}

TYPED_TEST(WmmaGemmTc, MisalignedRowsTakeTheSynchronousCopies) {
  // X one element past a 16-byte boundary: no chunk of X is 16-byte aligned, so v02 loads and
  // v03 copies it element by element while W still takes the vector path.
  for (int version = 2; version <= kGemmTcVersions; ++version) {
    expect_matches_oracle<TypeParam>(version, 19, 66, 48, Epilogue::kStore, 3 + version, 1);
  }
}

TYPED_TEST(WmmaGemmTc, IdentityInputGivesTheTransposedWeights) {
  // X = I (32 x 32), W (48, 32) small integers: Y = X Wᵀ = Wᵀ exactly, in every output type.
  // Pins the orientation: a kernel that read W as (k, n) or swapped X and W would not give it.
  using T = typename TypeParam::T;
  using OutT = typename TypeParam::OutT;
  const int m = 32, n = 48, k = 32;
  std::vector<T> x(static_cast<std::size_t>(m) * k, from_float<T>(0.0f));
  for (int i = 0; i < m; ++i) x[static_cast<std::size_t>(i) * k + i] = from_float<T>(1.0f);
  std::vector<T> w(static_cast<std::size_t>(n) * k);
  for (int j = 0; j < n; ++j) {
    for (int c = 0; c < k; ++c)
      w[static_cast<std::size_t>(j) * k + c] =
          from_float<T>(static_cast<float>((j * 7 + c * 3) % 11 - 5));
  }
  const DeviceBuffer<T> dx(x);
  const DeviceBuffer<T> dw(w);
  for (int version = 1; version <= kGemmTcVersions; ++version) {
    DeviceBuffer<OutT> dy(static_cast<std::size_t>(m) * n);
    launch_gemm_tc(dw.get(), dx.get(), dy.get(), m, n, k, nullptr, Epilogue::kStore, version);
    const std::vector<OutT> y = dy.to_host();
    int bad = 0;
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        const float got = to_float(y[static_cast<std::size_t>(i) * n + j]);
        const float want = to_float(w[static_cast<std::size_t>(j) * k + i]);
        if (got != want && bad++ < 3) {
          ADD_FAILURE() << "v0" << version << " y[" << i << "][" << j << "] = " << got
                        << ", want W[" << j << "][" << i << "] = " << want;
        }
      }
    }
    EXPECT_EQ(bad, 0) << "v0" << version;
  }
}

TYPED_TEST(WmmaGemmTc, EmptyReductionGivesZerosOrLeavesYUnchanged) {
  using T = typename TypeParam::T;
  using OutT = typename TypeParam::OutT;
  const std::vector<float> before = {7.0f, -1.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  for (int version = 2; version <= kGemmTcVersions; ++version) {
    DeviceBuffer<OutT> dy(testing::to_storage<OutT>(before));
    launch_gemm_tc<T, OutT>(nullptr, nullptr, dy.get(), 3, 2, 0, nullptr, Epilogue::kAccumulate,
                            version);
    EXPECT_EQ(testing::to_floats(dy.to_host()), before) << "v0" << version;
    launch_gemm_tc<T, OutT>(nullptr, nullptr, dy.get(), 3, 2, 0, nullptr, Epilogue::kStore,
                            version);
    EXPECT_EQ(testing::to_floats(dy.to_host()), std::vector<float>(6, 0.0f)) << "v0" << version;
  }
}

using WmmaGemmTcArgs = testing::DeviceTest;

template <typename F>
void expect_invalid(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected an error mentioning '" << fragment << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST_F(WmmaGemmTcArgs, RejectsBadSizesBuffersAndVersionsNamingThem) {
  DeviceBuffer<__half> buf(4096);
  DeviceBuffer<float> out(4096);
  const __half* p = buf.get();
  float* y = out.get();
  for (int version = 1; version <= kGemmTcVersions; ++version) {
    expect_invalid(
        [&] { launch_gemm_tc(p, p, y, -16, 16, 16, nullptr, Epilogue::kStore, version); },
        "m = -16");
    expect_invalid([&] { launch_gemm_tc(p, p, y, 16, -1, 16, nullptr, Epilogue::kStore, version); },
                   "n = -1");
    expect_invalid([&] { launch_gemm_tc(p, p, y, 16, 16, -7, nullptr, Epilogue::kStore, version); },
                   "k = -7");
    expect_invalid(
        [&] {
          launch_gemm_tc<__half, float>(nullptr, p, y, 16, 16, 16, nullptr, Epilogue::kStore,
                                        version);
        },
        "w is null");
    expect_invalid(
        [&] {
          launch_gemm_tc<__half, float>(p, nullptr, y, 16, 16, 16, nullptr, Epilogue::kStore,
                                        version);
        },
        "x is null");
    expect_invalid(
        [&] {
          launch_gemm_tc<__half, float>(p, p, nullptr, 16, 16, 16, nullptr, Epilogue::kStore,
                                        version);
        },
        "y is null");
    EXPECT_NO_THROW((launch_gemm_tc<__half, float>(nullptr, nullptr, nullptr, 0, 16, 16, nullptr,
                                                   Epilogue::kStore, version)));
  }
  for (int version : {0, kGemmTcVersions + 1}) {
    expect_invalid([&] { launch_gemm_tc(p, p, y, 16, 16, 16, nullptr, Epilogue::kStore, version); },
                   "version " + std::to_string(version) + " does not exist");
  }
}

TEST_F(WmmaGemmTcArgs, V01RefusesSizesThatAreNotMultiplesOf16AndMisalignedInputs) {
  DeviceBuffer<__half> buf(4096);
  DeviceBuffer<float> out(4096);
  const __half* p = buf.get();
  for (const std::tuple<int, int, int>& shape :
       std::vector<std::tuple<int, int, int>>{{17, 16, 16}, {16, 8, 16}, {16, 16, 40}}) {
    const int m = std::get<0>(shape), n = std::get<1>(shape), k = std::get<2>(shape);
    EXPECT_FALSE(gemm_tc_v01_supports(p, p, m, n, k));
    expect_invalid([&] { launch_gemm_tc(p, p, out.get(), m, n, k, nullptr, Epilogue::kStore, 1); },
                   "v01 needs m, n, k multiples of 16");
  }
  EXPECT_TRUE(gemm_tc_v01_supports(p, p, 16, 32, 48));
  EXPECT_FALSE(gemm_tc_v01_supports(p + 8, p, 16, 32, 48));  // 16 bytes past an aligned start
  expect_invalid(
      [&] { launch_gemm_tc(p, p + 8, out.get(), 16, 16, 16, nullptr, Epilogue::kStore, 1); },
      "32-byte aligned");
}

}  // namespace
}  // namespace nanoserve
