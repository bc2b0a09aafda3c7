// The paged addressing itself: FastDivmod's multiply-high division, and the slot convention
// shared by the KV write (launch_kv_append) and PagedAttention — what the write scatters to
// slot = block_id * block_size + offset is exactly what the attention kernels gather back.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/kv_append.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv.cuh"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/paged_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

TEST(FastDivmod, MatchesIntegerDivisionForEveryBlockSize) {
  // Every divisor the kernels accept, with dividends at the edges of each quotient step, small
  // ones, and large ones up to the 2^31 - 1 the formula is exact for.
  std::vector<int> dividends = {0,       1,          2,         3, 4095, 4096, 4097, (1 << 30) - 1,
                                1 << 30, 2147483646, 2147483647};
  for (int n = 0; n < 300; ++n) dividends.push_back(n);
  for (int d = 1; d <= kPagedMaxBlockSize; ++d) {
    const FastDivmod fast(d);
    for (int k : {1, 2, 7, 1000, 99991, 524287}) {  // multiples of d and their neighbours
      for (int delta : {-1, 0, 1}) {
        const long long n = static_cast<long long>(k) * d + delta;
        if (n >= 0 && n <= 2147483647) dividends.push_back(static_cast<int>(n));
      }
    }
    for (int n : dividends) {
      const int q = fast.div(n);
      ASSERT_EQ(q, n / d) << n << " / " << d;
      ASSERT_EQ(fast.mod(n, q), n % d) << n << " % " << d;
    }
    dividends.resize(311);  // keep the fixed set, drop this divisor's multiples
  }
}

TEST(PagedKv, KvAppendScattersWhatPagedAttentionGathers) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // Three sequences of 21, 3 and 40 tokens in blocks of 8, physical ids shuffled: write every
  // token's fp32 K/V with launch_kv_append at its slot, then decode must match the oracle on
  // the tokens in logical order (fp16 pool: the oracle sees the rounded values).
  const AttentionHeads heads{4, 2, 8};
  const int kv_dim = 16, block_size = 8;
  const std::vector<int> lens = {21, 3, 40};
  // The tables of a shuffled pool (its values are replaced below).
  const testing::HostPagedKv<__half> layout =
      testing::make_paged_kv<__half>(9, lens, block_size, kv_dim);
  std::vector<int> slots;
  std::vector<float> k, v;
  testing::HostPagedKv<__half> p = layout;  // contiguous view rewritten with the new tokens
  for (std::size_t b = 0; b < lens.size(); ++b) {
    const std::vector<float> kb = random_values(10 + b, 1, std::size_t(lens[b]) * kv_dim, 1.0f);
    const std::vector<float> vb = random_values(20 + b, 1, std::size_t(lens[b]) * kv_dim, 1.0f);
    k.insert(k.end(), kb.begin(), kb.end());
    v.insert(v.end(), vb.begin(), vb.end());
    for (int j = 0; j < lens[b]; ++j) {
      const int block = layout.block_tables[b * layout.max_blocks_per_seq + j / block_size];
      slots.push_back(block * block_size + j % block_size);
      for (int i = 0; i < kv_dim; ++i) {
        const std::size_t at = (b * p.max_context() + j) * kv_dim + i;
        p.contiguous.k[at] = from_float<__half>(kb[std::size_t(j) * kv_dim + i]);
        p.contiguous.v[at] = from_float<__half>(vb[std::size_t(j) * kv_dim + i]);
      }
    }
  }
  // A pool of NaN only: every value attention reads must have come through kv_append.
  const std::vector<__half> nan_pool(layout.k_pool.size(), from_float<__half>(NAN));
  p.k_pool = nan_pool;
  p.v_pool = nan_pool;
  testing::DevicePagedKv<__half> d(p);
  DeviceBuffer<float> d_k(k), d_v(v);
  DeviceBuffer<int> d_slots(slots);
  launch_kv_append(d_k.get(), d_v.get(), d_slots.get(), int(slots.size()), kv_dim, d.k_pool.get(),
                   d.v_pool.get(), std::int64_t{p.num_blocks} * block_size, nullptr);

  const std::vector<float> q = random_values(11, 1, lens.size() * 4 * 8, 1.0f);
  const std::vector<float> want = testing::oracle_paged(q, p, {1, 1, 1}, heads);
  for (int version : {1, 2}) {
    DeviceBuffer<float> d_q(q), d_out(q.size());
    launch_paged_attention_decode(d_q.get(), d.kv, d.block_tables, 1, heads, d_out.get(), {},
                                  nullptr, version);
    testing::expect_close(d_out.to_host(), want, tol::kKernelVsOracle,
                          "v" + std::to_string(version));
  }
}

}  // namespace
}  // namespace nanoserve
