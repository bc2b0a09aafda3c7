// RoPE v02, fused with the KV append (launch_rope_kv_append): q rotated into the attention
// input, k rotated and v copied straight into their cache slots, biases added first — against
// oracle::rope on the same rounded values, for every (activation, cache) type pair, from one
// strided QKV buffer and from three separate ones, at awkward head sizes, with padding and
// out-of-range slots; in fp32 bitwise equal to v01 + launch_kv_append.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/oracle/rope.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/kv_append.h"
#include "kernels/rope.h"
#include "tests/kernels/activation_dtype_test_support.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;
using testing::rounded;

// One rounding to T of an fp32 result (kKernelVsOracle when T is fp32 itself).
template <typename T>
Tolerance rounding_tolerance() {
  if constexpr (dtype_of<T>() == DType::kF32) {
    return tol::kKernelVsOracle;
  } else {
    return testing::store_tolerance<T>();
  }
}

std::vector<float> frequencies(int head_dim) {
  std::vector<float> inv(std::size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) inv[std::size_t(i)] = oracle::rope_frequency(i, head_dim, 10000.0f);
  return inv;
}

struct Shape {
  int n_heads, n_kv_heads, head_dim;
};

// The fused kernel on `shape` with activations in A and a cache in T, from a strided QKV
// buffer (`fused`) or three buffers, with or without biases, against the oracle.
template <typename A, typename T>
void check(Shape s, RopePairing pairing, bool fused, bool biased, std::uint64_t seed) {
  const std::vector<int> positions = {0, 1, 300, 7, 4095, 12};
  const std::vector<int> slots = {5, -1, 0, 7, 3, 8};  // 8 = num_slots: past the cache
  constexpr int kSlots = 8;
  const int rows = int(positions.size());
  const int q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  const int width = q_dim + 2 * kv_dim;
  // (rows, q_dim | kv_dim | kv_dim): every row's q, k, v side by side, as the QKV projection
  // writes them; the separate layout copies them into three packed arrays.
  const std::vector<float> qkv = rounded<A>(random_values(seed, 0, std::size_t(rows) * width, 2.0f));
  std::vector<float> bias(std::size_t(width), 0.0f);
  if (biased) bias = random_values(seed, 1, std::size_t(width), 0.5f);
  std::vector<float> q(std::size_t(rows) * q_dim), k(std::size_t(rows) * kv_dim), v(k.size());
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < width; ++i) {
      const float x = qkv[std::size_t(r) * width + i] + bias[std::size_t(i)];
      if (i < q_dim) q[std::size_t(r) * q_dim + i] = x;
      else if (i < q_dim + kv_dim) k[std::size_t(r) * kv_dim + i - q_dim] = x;
      else v[std::size_t(r) * kv_dim + i - q_dim - kv_dim] = x;
    }
  }
  const std::vector<float> inv = frequencies(s.head_dim);
  const RopeStyle style =
      pairing == RopePairing::kAdjacentPairs ? RopeStyle::kAdjacentPairs : RopeStyle::kRotateHalf;
  oracle::rope(q.data(), positions.data(), rows, s.n_heads, s.head_dim, inv.data(), style);
  oracle::rope(k.data(), positions.data(), rows, s.n_kv_heads, s.head_dim, inv.data(), style);

  // Device inputs in either layout.
  std::vector<float> packed;  // q rows, then k rows, then v rows (separate layout)
  for (int part = 0; part < 3; ++part) {
    const int begin = part == 0 ? 0 : part == 1 ? q_dim : q_dim + kv_dim;
    const int len = part == 0 ? q_dim : kv_dim;
    for (int r = 0; r < rows; ++r) {
      for (int i = 0; i < len; ++i) packed.push_back(qkv[std::size_t(r) * width + begin + i]);
    }
  }
  DeviceBuffer<A> d_in = testing::upload_as<A>(fused ? qkv : packed);
  DeviceBuffer<float> d_bias(bias);
  QkvRows<A> in;
  if (fused) {
    in = {d_in.get(), d_in.get() + q_dim, d_in.get() + q_dim + kv_dim, width, width};
  } else {
    in = {d_in.get(), d_in.get() + std::size_t(rows) * q_dim,
          d_in.get() + std::size_t(rows) * (q_dim + kv_dim), q_dim, kv_dim};
  }
  if (biased) {
    in.q_bias = d_bias.get();
    in.k_bias = d_bias.get() + q_dim;
    in.v_bias = d_bias.get() + q_dim + kv_dim;
  }
  const std::vector<float> old = random_values(seed, 2, std::size_t(kSlots) * kv_dim, 9.0f);
  DeviceBuffer<T> k_cache = testing::upload_as<T>(old), v_cache = testing::upload_as<T>(old);
  DeviceBuffer<int> d_pos(positions), d_slots(slots);
  DeviceBuffer<A> q_out(std::size_t(rows) * q_dim);
  launch_rope_kv_append<T, A>(in, d_pos.get(), rows, s.n_heads, s.n_kv_heads, s.head_dim,
                              inv.data(), pairing, q_out.get(),
                              KVCacheRows<T>{k_cache.get(), v_cache.get(), d_slots.get(), kSlots},
                              nullptr);

  const std::string at = std::string(fused ? "qkv" : "q|k|v") + (biased ? " biased" : "") +
                         (pairing == RopePairing::kAdjacentPairs ? " adjacent" : " half") +
                         " heads " + std::to_string(s.n_heads) + "/" +
                         std::to_string(s.n_kv_heads) + "x" + std::to_string(s.head_dim);
  testing::expect_within(testing::download(q_out), q, rounding_tolerance<A>(), "q " + at);
  // Cache rows: the written slots hold k (within one rounding to T) and v + bias rounded to T
  // exactly; every other row keeps its old contents bit for bit.
  std::vector<float> want_k = rounded<T>(old), want_v = rounded<T>(old);
  for (int r = 0; r < rows; ++r) {
    if (slots[std::size_t(r)] < 0 || slots[std::size_t(r)] >= kSlots) continue;
    for (int i = 0; i < kv_dim; ++i) {
      const std::size_t dst = std::size_t(slots[std::size_t(r)]) * kv_dim + i;
      want_k[dst] = k[std::size_t(r) * kv_dim + i];
      want_v[dst] = to_float(from_float<T>(v[std::size_t(r) * kv_dim + i]));
    }
  }
  testing::expect_within(testing::download(k_cache), want_k, rounding_tolerance<T>(),
                         "k cache " + at);
  EXPECT_EQ(testing::download(v_cache), want_v) << "v cache " << at;
}

template <typename A>
class RopeKvAppend : public testing::DeviceTest {};
TYPED_TEST_SUITE(RopeKvAppend, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(RopeKvAppend, MatchesTheOracleForEveryCacheTypeLayoutAndHeadShape) {
  using A = TypeParam;
  std::uint64_t seed = 60;
  for (const Shape s : {Shape{4, 2, 16}, Shape{3, 3, 6}, Shape{8, 1, 2}, Shape{2, 1, 256}}) {
    for (RopePairing pairing : {RopePairing::kAdjacentPairs, RopePairing::kRotateHalf}) {
      for (bool fused : {true, false}) {
        check<A, float>(s, pairing, fused, !fused, ++seed);
        check<A, __half>(s, pairing, fused, fused, ++seed);
        check<A, __nv_bfloat16>(s, pairing, fused, !fused, ++seed);
      }
    }
  }
}

// In fp32 the fused kernel forms every angle, product and sum exactly as v01 and the append do:
// the engine's fp32 pass keeps its bits (and the reference stories their tokens).
TEST(RopeKvAppendFp32, IsBitwiseRopeV01ThenTheAppend) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  constexpr int kRows = 4, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kSlots = 6;
  constexpr int kQ = kHeads * kHeadDim, kKv = kKvHeads * kHeadDim;
  const std::vector<float> q = random_values(70, 0, kRows * kQ, 3.0f);
  const std::vector<float> k = random_values(70, 1, kRows * kKv, 3.0f);
  const std::vector<float> v = random_values(70, 2, kRows * kKv, 3.0f);
  const std::vector<int> positions = {3, 0, 1000, 77}, slots = {2, 5, -1, 0};
  const std::vector<float> inv = frequencies(kHeadDim);
  DeviceBuffer<float> dq(q), dk(k), dv(v), q_out(q.size());
  DeviceBuffer<int> d_pos(positions), d_slots(slots);
  const std::vector<float> zeros(std::size_t(kSlots) * kKv, 0.0f);
  DeviceBuffer<float> kc(zeros), vc(zeros), kc2(zeros), vc2(zeros);
  for (RopePairing pairing : {RopePairing::kAdjacentPairs, RopePairing::kRotateHalf}) {
    launch_rope_kv_append<float, float>({dq.get(), dk.get(), dv.get(), kQ, kKv}, d_pos.get(),
                                        kRows, kHeads, kKvHeads, kHeadDim, inv.data(), pairing,
                                        q_out.get(), {kc.get(), vc.get(), d_slots.get(), kSlots},
                                        nullptr);
    DeviceBuffer<float> q1(q), k1(k);
    launch_rope<float>(q1.get(), k1.get(), d_pos.get(), kRows, kHeads, kKvHeads, kHeadDim,
                       inv.data(), pairing, nullptr);
    launch_kv_append<float, float>(k1.get(), dv.get(), d_slots.get(), kRows, kKv, kc2.get(),
                                   vc2.get(), kSlots, nullptr);
    EXPECT_EQ(q_out.to_host(), q1.to_host());
    EXPECT_EQ(kc.to_host(), kc2.to_host());
    EXPECT_EQ(vc.to_host(), vc2.to_host());
  }
}

TEST(RopeKvAppendArgs, ZeroRowsLaunchNothingAndBadArgumentsAreRefused) {
  const float inv[4] = {1.0f, 0.5f, 0.25f, 0.125f};
  DeviceBuffer<float> buf(64);
  DeviceBuffer<int> ids(std::vector<int>{0});
  const QkvRows<float> rows{buf.get(), buf.get(), buf.get(), 8, 8};
  const KVCacheRows<float> cache{buf.get(), buf.get(), ids.get(), 1};
  const auto run = [&](const QkvRows<float>& in, int n_rows, int n_heads, int n_kv_heads,
                       int head_dim, const float* table, const KVCacheRows<float>& c) {
    launch_rope_kv_append<float, float>(in, ids.get(), n_rows, n_heads, n_kv_heads, head_dim,
                                        table, RopePairing::kRotateHalf, buf.get(), c, nullptr);
  };
  EXPECT_NO_THROW(run(rows, 0, 1, 1, 8, inv, cache));
  EXPECT_THROW(run(rows, -1, 1, 1, 8, inv, cache), std::invalid_argument);
  EXPECT_THROW(run(rows, 1, 1, 0, 8, inv, cache), std::invalid_argument);   // no KV heads
  EXPECT_THROW(run(rows, 1, 1, 1, 7, inv, cache), std::invalid_argument);   // odd head_dim
  EXPECT_THROW(run(rows, 1, 2, 1, 8, inv, cache), std::invalid_argument);   // q row > stride
  EXPECT_THROW(run({buf.get(), buf.get(), buf.get(), 8, 4}, 1, 1, 1, 8, inv, cache),
               std::invalid_argument);                                       // kv row > stride
  EXPECT_THROW(run(rows, 1, 1, 1, 8, nullptr, cache), std::invalid_argument);
  const float bad[4] = {1.0f, 0.0f, 1.0f, 1.0f};
  EXPECT_THROW(run(rows, 1, 1, 1, 8, bad, cache), std::invalid_argument);
  EXPECT_THROW(run({nullptr, buf.get(), buf.get(), 8, 8}, 1, 1, 1, 8, inv, cache),
               std::invalid_argument);
  EXPECT_THROW(run(rows, 1, 1, 1, 8, inv, {buf.get(), buf.get(), nullptr, 1}),
               std::invalid_argument);
  EXPECT_THROW(run(rows, 1, 1, 1, 8, inv, {buf.get(), buf.get(), ids.get(), -1}),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
