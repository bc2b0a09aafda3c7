// Decode attention, every version and storage type, against oracle::attention run per sequence
// on exactly the stored cache values; rows past each sequence's length hold NaN.
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/oracle/attention.h"
#include "common/tolerances.h"
#include "kernels/attention.h"
#include "kernels/device_buffer.h"
#include "tests/kernels/attention_test_support.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

// How a run of the kernel is configured: version, and for v02 the split-K workspace.
struct Run {
  int version;
  bool workspace;
  int keys_per_split;
  std::string name() const {
    return "v" + std::to_string(version) +
           (workspace ? " split " + std::to_string(keys_per_split) : "");
  }
};

// Every way to run decode: v01; v02 in one pass; v02 split in the default chunks and in chunks
// of 16 (many splits, boundaries inside the awkward lengths).
const std::vector<Run> kRuns = {{1, false, kAttentionDecodeKeysPerSplit},
                                {2, false, kAttentionDecodeKeysPerSplit},
                                {2, true, kAttentionDecodeKeysPerSplit},
                                {2, true, 16}};

// The oracle's output for each sequence (zeros for an empty one), lengths clamped as the
// kernel documents.
template <typename T>
std::vector<float> oracle_decode(const std::vector<float>& q,
                                 const testing::HostKvCache<T>& cache,
                                 const std::vector<int>& lens, const AttentionHeads& heads) {
  const std::size_t q_row = std::size_t(heads.n_heads) * heads.head_dim;
  std::vector<float> want(lens.size() * q_row, 0.0f);
  for (std::size_t b = 0; b < lens.size(); ++b) {
    const int len = std::min(lens[b], cache.max_seq_len);
    if (len <= 0) continue;
    const int position = len - 1;  // the query is the newest token
    oracle::attention(q.data() + b * q_row, &position, 1, cache.rows(cache.k, int(b), len).data(),
                      cache.rows(cache.v, int(b), len).data(), len, testing::oracle_shape(heads),
                      want.data() + b * q_row);
  }
  return want;
}

template <typename T>
void check_decode(const AttentionHeads& heads, const std::vector<int>& lens, int max_seq_len,
                  const std::vector<Run>& runs) {
  const int batch = int(lens.size());
  const int kv_dim = heads.n_kv_heads * heads.head_dim;
  const testing::HostKvCache<T> cache = testing::make_kv_cache<T>(17, lens, max_seq_len, kv_dim);
  const std::vector<float> q =
      random_values(18, heads.head_dim, std::size_t(batch) * heads.n_heads * heads.head_dim, 1.0f);
  const std::vector<float> want = oracle_decode(q, cache, lens, heads);

  DeviceBuffer<float> d_q(q);
  DeviceBuffer<T> d_k(cache.k), d_v(cache.v);
  DeviceBuffer<int> d_lens(lens);
  for (const Run& run : runs) {
    DeviceBuffer<float> d_out(want.size());
    DeviceBuffer<float> d_ws(attention_decode_workspace_floats(batch, heads.n_heads, heads.head_dim,
                                                               max_seq_len, run.keys_per_split));
    DecodeWorkspace ws;
    if (run.workspace) ws = {d_ws.get(), d_ws.size()};
    launch_attention_decode(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), batch, max_seq_len,
                            heads, d_out.get(), ws, nullptr, run.version, run.keys_per_split);
    testing::expect_close(d_out.to_host(), want, tol::kKernelVsOracle,
                          run.name() + " " + testing::describe(heads));
  }
}

template <typename T>
class AttentionDecodeTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(AttentionDecodeTyped, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(AttentionDecodeTyped, EveryVersionMatchesTheOracleAcrossContextLengths) {
  // The awkward lengths in one batch: a single key, around a 16-key chunk, around 256 (v02's
  // default chunk and a power of two).
  check_decode<TypeParam>({4, 2, 16}, {1, 15, 16, 17, 255, 256, 257}, 257, kRuns);
}

TYPED_TEST(AttentionDecodeTyped, EveryVersionMatchesTheOracleAcrossGqaRatiosAndWidths) {
  // GQA ratios 1, 2, 4, 8 with head widths 16, 8, 128, 64; lengths cross the 16-key chunk.
  for (const AttentionHeads& heads : {AttentionHeads{4, 4, 16}, AttentionHeads{2, 1, 8},
                                      AttentionHeads{8, 2, 128}, AttentionHeads{8, 1, 64}}) {
    check_decode<TypeParam>(heads, {1, 17, 33}, 33, kRuns);
  }
}

TYPED_TEST(AttentionDecodeTyped, HandlesUnusualGroupsAndWidths) {
  // Group 3 (not a power of two), group 12 (more heads than one v02 block serves), head_dim 256
  // (a lane owns 8 values of 256), head_dim 24 (3 fp16 vectors: 4 lanes per key, one idle).
  const std::vector<int> lens = {1, 17, 40};
  for (const AttentionHeads& heads : {AttentionHeads{6, 2, 32}, AttentionHeads{12, 1, 16},
                                      AttentionHeads{2, 1, 256}, AttentionHeads{3, 1, 24}}) {
    check_decode<TypeParam>(heads, lens, 40, kRuns);
  }
}

using AttentionDecode = testing::DeviceTest;

TEST_F(AttentionDecode, EmptySequencesGetZerosAndLongLengthsAreClamped) {
  // Length 0 and -3: no keys, zero output; 99 > max_seq_len 20: clamped to 20 (rows 0..19).
  const AttentionHeads heads{4, 2, 16};
  check_decode<float>(heads, {0, 5, -3, 99}, 20, kRuns);
}

TEST_F(AttentionDecode, AutoVersionFallsBackToV01ForWidthsV02CannotLoad) {
  // head_dim 12 fp16 is 24 bytes per row: no 16-byte vectors. Auto must still be right...
  const AttentionHeads heads{2, 1, 12};
  check_decode<__half>(heads, {3, 9}, 9, {{0, true, 4}, {1, false, 4}});
  // ...and asking for v02 explicitly is an error, not a misaligned load.
  EXPECT_THROW(check_decode<__half>(heads, {3}, 9, {{2, false, 4}}), std::invalid_argument);
}

TEST(AttentionDecodeArgs, WorkspaceSizeCoversEverySplit) {
  // 600 keys in chunks of 256: 3 splits; per (sequence, head, split) head_dim + 2 floats.
  EXPECT_EQ(attention_decode_workspace_floats(2, 4, 8, 600, 256), std::size_t(2 * 4 * 3 * 10));
  EXPECT_EQ(attention_decode_workspace_floats(2, 4, 8, 256, 256), 0u);  // one chunk: no split
  EXPECT_THROW(attention_decode_workspace_floats(2, 4, 8, 600, 0), std::invalid_argument);
}

TEST(AttentionDecodeArgs, RejectsBadArguments) {
  const auto decode = [](int batch, int max_seq_len, AttentionHeads heads, DecodeWorkspace ws,
                         int version) {
    // 16-byte aligned dummy "device" pointers: argument checks run before any launch.
    alignas(16) static float cache[4];
    launch_attention_decode<float>(nullptr, cache, cache, nullptr, batch, max_seq_len, heads,
                                   nullptr, ws, nullptr, version);
  };
  const AttentionHeads ok{4, 2, 16};
  EXPECT_THROW(decode(-1, 8, ok, {}, 0), std::invalid_argument);
  EXPECT_THROW(decode(65536, 8, ok, {}, 0), std::invalid_argument);  // grid limit
  EXPECT_THROW(decode(1, 0, ok, {}, 0), std::invalid_argument);
  EXPECT_THROW(decode(1, 8, {6, 4, 16}, {}, 0), std::invalid_argument);  // 6 % 4 != 0
  EXPECT_THROW(decode(1, 8, {4, 0, 16}, {}, 0), std::invalid_argument);
  EXPECT_THROW(decode(1, 8, {4, 2, 0}, {}, 0), std::invalid_argument);
  EXPECT_THROW(decode(1, 8, {4, 2, 260}, {}, 0), std::invalid_argument);
  EXPECT_THROW(decode(1, 8, ok, {}, 3), std::invalid_argument);
  // v01 holds every score in shared memory: 20000 keys do not fit in 48 KiB.
  EXPECT_THROW(decode(1, 20000, ok, {}, 1), std::invalid_argument);
  // A workspace too small for 2 splits of a fixed 256 keys (the automatic choice would run
  // unsplit instead: test_attention_decode_split.cpp).
  float too_small[8];
  alignas(16) static float cache[4];
  EXPECT_THROW(launch_attention_decode<float>(nullptr, cache, cache, nullptr, 1, 300, ok, nullptr,
                                              {too_small, 8}, nullptr, 2,
                                              kAttentionDecodeKeysPerSplit),
               std::invalid_argument);
  EXPECT_NO_THROW(decode(0, 8, ok, {}, 0));  // empty batch: nothing to do
}

}  // namespace
}  // namespace nanoserve
