// Copy-on-write block copy: destination blocks become bit-exact copies of their sources in
// every requested layer, for K and V, and nothing else in the pools changes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/block_copy.h"
#include "kernels/device_buffer.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;
using testing::to_storage;

// Pools of shape (layers, num_blocks, block_size, kv_dim).
struct PoolShape {
  int layers, num_blocks, block_size, kv_dim;
  std::size_t block_elems() const { return std::size_t(block_size) * kv_dim; }
  std::size_t layer_elems() const { return block_elems() * num_blocks; }
  std::size_t elems() const { return layer_elems() * layers; }
};

// A storage value with the given bit pattern (the low sizeof(T) bytes; little-endian hosts).
template <typename T>
T with_bits(std::uint32_t bits) {
  T t;
  std::memcpy(static_cast<void*>(&t), &bits, sizeof(T));
  return t;
}

// What the pools hold after copying `pairs` in layers [first_layer, first_layer + n_layers).
template <typename T>
std::vector<T> expected_after(std::vector<T> pool, const PoolShape& s,
                              const std::vector<int>& pairs, int first_layer, int n_layers) {
  for (int l = first_layer; l < first_layer + n_layers; ++l) {
    for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
      const int src = pairs[i], dst = pairs[i + 1];
      if (src < 0 || src >= s.num_blocks || dst < 0 || dst >= s.num_blocks) continue;
      std::memcpy(&pool[l * s.layer_elems() + dst * s.block_elems()],
                  &pool[l * s.layer_elems() + src * s.block_elems()], s.block_elems() * sizeof(T));
    }
  }
  return pool;
}

// Runs one copy (all layers, or only `one_layer` >= 0) and compares both pools bit for bit.
template <typename T>
void check_block_copy(const PoolShape& s, const std::vector<int>& pairs, int one_layer = -1) {
  std::vector<T> k = to_storage<T>(random_values(51, s.kv_dim, s.elems(), 3.0f));
  std::vector<T> v = to_storage<T>(random_values(52, s.kv_dim, s.elems(), 3.0f));
  // A NaN with a payload and a negative zero at the start of every block: a bit copy, not a
  // conversion, keeps them.
  for (std::size_t at = 0; at + 1 < s.elems(); at += s.block_elems()) {
    k[at] = with_bits<T>(sizeof(T) == 4 ? 0x7fc01234u : 0x7e01u);
    v[at + 1] = with_bits<T>(sizeof(T) == 4 ? 0x80000000u : 0x8000u);
  }
  DeviceBuffer<T> d_k(k), d_v(v);
  DeviceBuffer<int> d_pairs(pairs);
  const int num_pairs = int(pairs.size() / 2);
  const std::string what = "layers=" + std::to_string(s.layers) +
                           " block_size=" + std::to_string(s.block_size) +
                           " kv_dim=" + std::to_string(s.kv_dim);
  if (one_layer < 0) {
    launch_block_copy(d_k.get(), d_v.get(), s.layers, s.num_blocks, s.block_size, s.kv_dim,
                      d_pairs.get(), num_pairs, nullptr);
  } else {
    const std::size_t off = one_layer * s.layer_elems();
    launch_block_copy(d_k.get() + off, d_v.get() + off, 1, s.num_blocks, s.block_size, s.kv_dim,
                      d_pairs.get(), num_pairs, nullptr);
  }
  const int first = one_layer < 0 ? 0 : one_layer, n = one_layer < 0 ? s.layers : 1;
  const std::vector<T> want_k = expected_after(k, s, pairs, first, n);
  const std::vector<T> want_v = expected_after(v, s, pairs, first, n);
  const std::vector<T> got_k = d_k.to_host(), got_v = d_v.to_host();
  EXPECT_EQ(std::memcmp(got_k.data(), want_k.data(), got_k.size() * sizeof(T)), 0) << "K " << what;
  EXPECT_EQ(std::memcmp(got_v.data(), want_v.data(), got_v.size() * sizeof(T)), 0) << "V " << what;
}

template <typename T>
class BlockCopyTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(BlockCopyTyped, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(BlockCopyTyped, CopiesEveryLayerExactlyAndNothingElse) {
  // 3 layers of 6 blocks; pairs as copy-on-write produces them (fresh, distinct destinations).
  const std::vector<int> pairs = {4, 0, 1, 5, 2, 3};
  check_block_copy<TypeParam>({3, 6, 16, 32}, pairs);
}

TYPED_TEST(BlockCopyTyped, OneLayerCallLeavesTheOtherLayersAlone) {
  check_block_copy<TypeParam>({3, 6, 16, 32}, {4, 0, 1, 5}, /*one_layer=*/1);
}

TYPED_TEST(BlockCopyTyped, EveryWordWidthCopiesExactly) {
  // Block bytes (block_size * kv_dim * sizeof(T)) of 2, 4, 6, 8, 12 and 16 * k: the 16-, 8-,
  // 4- and 2-byte word paths; odd sizes only reachable with 16-bit types.
  for (const PoolShape& s :
       {PoolShape{2, 4, 1, 1}, PoolShape{2, 4, 1, 2}, PoolShape{2, 4, 1, 3}, PoolShape{2, 4, 1, 4},
        PoolShape{2, 4, 3, 2}, PoolShape{2, 4, 4, 8}, PoolShape{2, 4, 17, 3}}) {
    check_block_copy<TypeParam>(s, {3, 1, 0, 2});
  }
}

TEST(BlockCopy, PairsNamingBlocksOutsideThePoolCopyNothing) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // (-1, 2), (1, 6) and (6, 0) are outside a pool of 6 blocks; (3, 4) is copied.
  check_block_copy<float>({2, 6, 4, 8}, {-1, 2, 1, 6, 6, 0, 3, 4});
}

TEST(BlockCopyArgs, RejectsBadSizes) {
  alignas(16) static float pool[4];  // argument checks run before any launch
  EXPECT_THROW(launch_block_copy<float>(pool, pool, 0, 4, 16, 8, nullptr, 1, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_block_copy<float>(pool, pool, 70000, 4, 16, 8, nullptr, 1, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_block_copy<float>(pool, pool, 2, 0, 16, 8, nullptr, 1, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_block_copy<float>(pool, pool, 2, 4, 0, 8, nullptr, 1, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_block_copy<float>(pool, pool, 2, 4, 16, 0, nullptr, 1, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_block_copy<float>(pool, pool, 2, 4, 16, 8, nullptr, -1, nullptr),
               std::invalid_argument);
  EXPECT_NO_THROW(launch_block_copy<float>(pool, pool, 2, 4, 16, 8, nullptr, 0, nullptr));
}

}  // namespace
}  // namespace nanoserve
