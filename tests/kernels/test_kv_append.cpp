// KV append: each row lands in its slot, rounded once to the storage type, and nothing else of
// the cache changes.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/device_buffer.h"
#include "kernels/kv_append.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;
using testing::to_storage;

template <typename T>
class KvAppendTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(KvAppendTyped, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(KvAppendTyped, WritesEachRowToItsSlotAndNothingElse) {
  using T = TypeParam;
  // A batch of 2 sequences with max_seq_len 5: slot = seq * 5 + position. Rows: seq 1 pos 2,
  // seq 0 pos 0, seq 0 pos 3, a padding row (-1), and a slot past the cache (10).
  constexpr int kMaxSeqLen = 5, kBatch = 2, kNumSlots = kBatch * kMaxSeqLen;
  const std::vector<int> slots = {1 * kMaxSeqLen + 2, 0, 3, -1, kNumSlots};
  const int rows = int(slots.size());
  for (int kv_dim : {1, 3, 17, 129, 257}) {
    const std::vector<float> k = random_values(13, kv_dim, std::size_t(rows) * kv_dim, 4.0f);
    const std::vector<float> v = random_values(14, kv_dim, std::size_t(rows) * kv_dim, 4.0f);
    // Recognisable old contents: every untouched element must keep them.
    const std::vector<T> old_k = to_storage<T>(random_values(15, kv_dim, std::size_t(kNumSlots) * kv_dim, 9.0f));
    const std::vector<T> old_v = to_storage<T>(random_values(16, kv_dim, std::size_t(kNumSlots) * kv_dim, 9.0f));
    DeviceBuffer<float> d_k(k), d_v(v);
    DeviceBuffer<int> d_slots(slots);
    DeviceBuffer<T> d_k_cache(old_k), d_v_cache(old_v);
    launch_kv_append(d_k.get(), d_v.get(), d_slots.get(), rows, kv_dim, d_k_cache.get(),
                     d_v_cache.get(), kNumSlots, nullptr);

    std::vector<T> want_k = old_k, want_v = old_v;
    for (int r = 0; r < rows; ++r) {
      if (slots[r] < 0 || slots[r] >= kNumSlots) continue;
      for (int i = 0; i < kv_dim; ++i) {
        want_k[std::size_t(slots[r]) * kv_dim + i] = from_float<T>(k[std::size_t(r) * kv_dim + i]);
        want_v[std::size_t(slots[r]) * kv_dim + i] = from_float<T>(v[std::size_t(r) * kv_dim + i]);
      }
    }
    const std::vector<T> got_k = d_k_cache.to_host(), got_v = d_v_cache.to_host();
    EXPECT_EQ(std::memcmp(got_k.data(), want_k.data(), got_k.size() * sizeof(T)), 0)
        << "keys, kv_dim=" << kv_dim;
    EXPECT_EQ(std::memcmp(got_v.data(), want_v.data(), got_v.size() * sizeof(T)), 0)
        << "values, kv_dim=" << kv_dim;
  }
}

TEST(KvAppend, RoundsToNearestEvenOnce) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // 1 + 2^-11 is halfway between two fp16 values: nearest-even gives 1.0; 1 + 3·2^-11 gives
  // 1 + 2^-9 (the upper neighbour, whose last bit is even).
  DeviceBuffer<float> d_k(std::vector<float>{1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f});
  DeviceBuffer<float> d_v(std::vector<float>{-2.0f, 65504.0f});
  DeviceBuffer<int> d_slots(std::vector<int>{0});
  DeviceBuffer<__half> d_kc(2), d_vc(2);
  launch_kv_append(d_k.get(), d_v.get(), d_slots.get(), 1, 2, d_kc.get(), d_vc.get(), 1, nullptr);
  const std::vector<__half> kc = d_kc.to_host(), vc = d_vc.to_host();
  EXPECT_EQ(__half2float(kc[0]), 1.0f);
  EXPECT_EQ(__half2float(kc[1]), 1.0f + 0x1p-9f);
  EXPECT_EQ(__half2float(vc[0]), -2.0f);
  EXPECT_EQ(__half2float(vc[1]), 65504.0f);
}

TEST(KvAppendArgs, RejectsBadSizes) {
  EXPECT_NO_THROW(launch_kv_append<float>(nullptr, nullptr, nullptr, 0, 8, nullptr, nullptr, 4,
                                          nullptr));
  EXPECT_THROW(launch_kv_append<float>(nullptr, nullptr, nullptr, -1, 8, nullptr, nullptr, 4,
                                       nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_kv_append<float>(nullptr, nullptr, nullptr, 1, 0, nullptr, nullptr, 4,
                                       nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_kv_append<__half>(nullptr, nullptr, nullptr, 1, 8, nullptr, nullptr, -4,
                                        nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
