// Every kernel of the forward pass but the linears (test_activation_dtype_linear.cpp) with fp16 /
// bf16 activations (issue 21, "Precision"): the
// oracle runs in fp32 on exactly the rounded values the kernel reads (activations, weights,
// KV), so the only difference allowed is the kernel's one rounding on store
// (tol::kKernelStoreFp16 / kKernelStoreBf16: half an ulp plus reordered sums). A kernel that
// truncates, rounds twice or keeps an intermediate in the activation type fails them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/oracle/attention.h"
#include "common/oracle/ops.h"
#include "common/oracle/rope.h"
#include "common/tolerances.h"
#include "kernels/attention.h"
#include "kernels/device_buffer.h"
#include "kernels/embedding.h"
#include "kernels/kv_append.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "tests/kernels/activation_dtype_test_support.h"
#include "tests/kernels/attention_test_support.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;
using testing::to_floats;
using testing::to_storage;

using testing::download;
using testing::rounded;
using testing::store_tolerance;

template <typename A>
DeviceBuffer<A> upload(const std::vector<float>& values) {
  return testing::upload_as<A>(values);
}

template <typename A>
class ActivationDtype : public testing::DeviceTest {};
using HalfTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(ActivationDtype, HalfTypes, testing::StorageTypeNames);

// The tolerance can fail: a store that truncates (rounds toward zero) instead of rounding to
// nearest breaks it, so every test below would catch a kernel that did.
TYPED_TEST(ActivationDtype, StoreToleranceRejectsATruncatingStore) {
  using A = TypeParam;
  const std::vector<float> exact = random_values(39, 0, 4096, 4.0f);
  std::vector<float> nearest(exact.size()), truncated(exact.size());
  for (std::size_t i = 0; i < exact.size(); ++i) {
    nearest[i] = to_float(from_float<A>(exact[i]));
    if constexpr (dtype_of<A>() == DType::kF16) {
      truncated[i] = to_float(__float2half_rz(exact[i]));
    } else {
      truncated[i] = to_float(__float2bfloat16_rz(exact[i]));
    }
  }
  EXPECT_TRUE(allclose(nearest, exact, store_tolerance<A>()).ok);
  const CloseResult r = allclose(truncated, exact, store_tolerance<A>());
  EXPECT_FALSE(r.ok) << "a truncating store passes: " << r.summary();
}

TYPED_TEST(ActivationDtype, EmbeddingRoundsTheTableRowOnce) {
  using A = TypeParam;
  constexpr int kVocab = 7, kDim = 33;
  const std::vector<float> table = random_values(40, 0, kVocab * kDim, 2.0f);  // fp32 table
  const std::vector<int> tokens = {3, 0, 6, 3};
  std::vector<float> want(tokens.size() * kDim);
  oracle::embedding(table.data(), kVocab, kDim, tokens.data(), int(tokens.size()), want.data());
  DeviceBuffer<float> d_table(table);
  DeviceBuffer<int> d_tokens(tokens);
  DeviceBuffer<A> d_out(want.size());
  launch_embedding<float, A>(d_table.get(), kVocab, kDim, d_tokens.get(), int(tokens.size()),
                             d_out.get(), nullptr, nullptr);
  testing::expect_within(download(d_out), want, store_tolerance<A>(), "embedding");
}

TYPED_TEST(ActivationDtype, RmsnormEveryVersionRoundsOnceOnAwkwardSizes) {
  using A = TypeParam;
  for (int rows : {1, 3}) {
    for (int dim : {1, 17, 257, 1025}) {
      const std::vector<float> x =
          rounded<A>(random_values(41, rows * 10000 + dim, std::size_t(rows) * dim, 3.0f, 0.5f));
      const std::vector<float> gain = rounded<A>(random_values(42, dim, dim, 0.2f, 1.0f));
      std::vector<float> want(x.size());
      oracle::rmsnorm(x.data(), gain.data(), rows, dim, 1e-5f, want.data());
      DeviceBuffer<A> d_x = upload<A>(x), d_gain = upload<A>(gain);
      for (int version = 1; version <= kRmsnormVersions; ++version) {
        DeviceBuffer<A> d_out(x.size());
        launch_rmsnorm<A, A>(d_x.get(), d_gain.get(), rows, dim, 1e-5f, d_out.get(), nullptr,
                             version);
        testing::expect_within(download(d_out), want, store_tolerance<A>(),
                              "v" + std::to_string(version) + " rows=" + std::to_string(rows) +
                                  " dim=" + std::to_string(dim));
      }
    }
  }
}

TYPED_TEST(ActivationDtype, RopeRotatesInFp32AndRoundsOnce) {
  using A = TypeParam;
  constexpr int kRows = 5, kHeads = 4, kKvHeads = 2, kHeadDim = 16;
  const std::vector<int> positions = {0, 1, 7, 100, 300};
  std::vector<float> q = rounded<A>(random_values(43, 0, kRows * kHeads * kHeadDim, 1.0f));
  std::vector<float> k = rounded<A>(random_values(43, 1, kRows * kKvHeads * kHeadDim, 1.0f));
  DeviceBuffer<A> d_q = upload<A>(q), d_k = upload<A>(k);
  DeviceBuffer<int> d_pos(positions);
  launch_rope<A>(d_q.get(), d_k.get(), d_pos.get(), kRows, kHeads, kKvHeads, kHeadDim, 10000.0f,
              RopePairing::kAdjacentPairs, nullptr);
  oracle::rope(q.data(), positions.data(), kRows, kHeads, kHeadDim, 10000.0f,
               RopeStyle::kAdjacentPairs);
  oracle::rope(k.data(), positions.data(), kRows, kKvHeads, kHeadDim, 10000.0f,
               RopeStyle::kAdjacentPairs);
  testing::expect_within(download(d_q), q, store_tolerance<A>(), "rope q");
  testing::expect_within(download(d_k), k, store_tolerance<A>(), "rope k");
}

TYPED_TEST(ActivationDtype, SwigluRoundsOnce) {
  using A = TypeParam;
  constexpr int kN = 1000;
  const std::vector<float> gate = rounded<A>(random_values(44, 0, kN, 6.0f));
  const std::vector<float> up = rounded<A>(random_values(44, 1, kN, 2.0f));
  std::vector<float> want(kN);
  oracle::swiglu(gate.data(), up.data(), kN, want.data());
  DeviceBuffer<A> d_gate = upload<A>(gate), d_up = upload<A>(up);
  launch_swiglu<A>(d_gate.get(), d_up.get(), kN, d_gate.get(), nullptr);  // in place
  testing::expect_within(download(d_gate), want, store_tolerance<A>(), "swiglu");
}

TYPED_TEST(ActivationDtype, KvAppendConvertsActivationsToTheCacheType) {
  using A = TypeParam;
  constexpr int kRows = 3, kKvDim = 24, kSlots = 5;
  const std::vector<float> k = rounded<A>(random_values(45, 0, kRows * kKvDim, 1.0f));
  const std::vector<float> v = rounded<A>(random_values(45, 1, kRows * kKvDim, 1.0f));
  const std::vector<int> slots = {4, -1, 0};
  DeviceBuffer<A> d_k = upload<A>(k), d_v = upload<A>(v);
  DeviceBuffer<int> d_slots(slots);
  // An fp32 cache keeps the A values exactly; a cache in the other half type rounds once.
  DeviceBuffer<float> kc(std::vector<float>(kSlots * kKvDim, 0.0f));
  DeviceBuffer<float> vc(std::vector<float>(kSlots * kKvDim, 0.0f));
  launch_kv_append<float, A>(d_k.get(), d_v.get(), d_slots.get(), kRows, kKvDim, kc.get(),
                             vc.get(), kSlots, nullptr);
  const std::vector<float> got_k = kc.to_host(), got_v = vc.to_host();
  for (int r = 0; r < kRows; ++r) {
    if (slots[r] < 0) continue;
    for (int i = 0; i < kKvDim; ++i) {
      EXPECT_EQ(got_k[slots[r] * kKvDim + i], k[r * kKvDim + i]) << "row " << r << " i " << i;
      EXPECT_EQ(got_v[slots[r] * kKvDim + i], v[r * kKvDim + i]) << "row " << r << " i " << i;
    }
  }
}

// Decode and prefill attention: q in A, the cache in every storage type, out in A.
template <typename A, typename T>
void check_attention(const AttentionHeads& heads) {
  const std::vector<int> lens = {1, 17, 40};
  const int max_seq_len = 40, batch = int(lens.size());
  const int kv_dim = heads.n_kv_heads * heads.head_dim;
  const std::size_t q_row = std::size_t(heads.n_heads) * heads.head_dim;
  const testing::HostKvCache<T> cache = testing::make_kv_cache<T>(50, lens, max_seq_len, kv_dim);
  DeviceBuffer<T> d_k(cache.k), d_v(cache.v);
  const std::string what = std::string(dtype_name(dtype_of<T>())) + " cache " +
                           testing::describe(heads);
  {  // decode: one query per sequence, every version
    const std::vector<float> q = rounded<A>(random_values(51, 0, batch * q_row, 1.0f));
    std::vector<float> want(batch * q_row);
    for (int b = 0; b < batch; ++b) {
      const int position = lens[b] - 1;
      oracle::attention(q.data() + b * q_row, &position, 1, cache.rows(cache.k, b, lens[b]).data(),
                        cache.rows(cache.v, b, lens[b]).data(), lens[b],
                        testing::oracle_shape(heads), want.data() + b * q_row);
    }
    DeviceBuffer<A> d_q = upload<A>(q);
    DeviceBuffer<int> d_lens(lens);
    DeviceBuffer<float> d_ws(
        attention_decode_workspace_floats(batch, heads.n_heads, heads.head_dim, max_seq_len, 16));
    for (int version = 1; version <= kAttentionDecodeVersions; ++version) {
      for (bool split : {false, true}) {
        if (version == 1 && split) continue;
        DeviceBuffer<A> d_out(want.size());
        DecodeWorkspace ws;
        if (split) ws = {d_ws.get(), d_ws.size()};
        launch_attention_decode<T, A>(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), batch,
                                      max_seq_len, heads, d_out.get(), ws, nullptr, version, 16);
        testing::expect_within(download(d_out), want, store_tolerance<A>(),
                              "decode v" + std::to_string(version) + (split ? " split " : " ") +
                                  what);
      }
    }
  }
  {  // prefill: sequence 1's last 9 positions, every version
    const int n_q = 9, start = lens[1] - n_q;
    const std::vector<float> q = rounded<A>(random_values(52, 0, n_q * q_row, 1.0f));
    std::vector<int> positions(n_q);
    for (int t = 0; t < n_q; ++t) positions[t] = start + t;
    std::vector<float> want(n_q * q_row);
    oracle::attention(q.data(), positions.data(), n_q, cache.rows(cache.k, 1, lens[1]).data(),
                      cache.rows(cache.v, 1, lens[1]).data(), lens[1],
                      testing::oracle_shape(heads), want.data());
    DeviceBuffer<A> d_q = upload<A>(q);
    const std::size_t seq1 = std::size_t(max_seq_len) * kv_dim;
    // The CUDA-core versions, which take any (T, A); v03 (tensor cores, T == A in 16 bits, P
    // rounded to T) has its own tolerance: test_attention_prefill_tc.cpp.
    for (int version = 1; version <= 2; ++version) {
      DeviceBuffer<A> d_out(want.size());
      launch_attention_prefill<T, A>(d_q.get(), d_k.get() + seq1, d_v.get() + seq1, n_q, start,
                                     max_seq_len, heads, d_out.get(), nullptr, version);
      testing::expect_within(download(d_out), want, store_tolerance<A>(),
                             "prefill v" + std::to_string(version) + " " + what);
    }
  }
}

TYPED_TEST(ActivationDtype, AttentionReadsQInTheActivationTypeAndKvInAnyType) {
  using A = TypeParam;
  for (const AttentionHeads& heads : {AttentionHeads{4, 2, 16}, AttentionHeads{8, 1, 64}}) {
    check_attention<A, float>(heads);
    check_attention<A, __half>(heads);
    check_attention<A, __nv_bfloat16>(heads);
  }
}

}  // namespace
}  // namespace nanoserve
