// Embedding gather against oracle::embedding on the storage-rounded table: a gather converts
// each value exactly, so the rows must be identical, not just close.
#include <stdexcept>
#include <vector>

#include "common/oracle/ops.h"
#include "kernels/device_buffer.h"
#include "kernels/embedding.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;
using testing::to_floats;
using testing::to_storage;

template <typename T>
class EmbeddingTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(EmbeddingTyped, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(EmbeddingTyped, CopiesTheRowsOfTheOracleExactly) {
  using T = TypeParam;
  constexpr int kVocab = 37;
  // Repeated ids, the first and last row, and a run of one token.
  const std::vector<int> tokens = {5, 0, 36, 5, 17, 17, 1};
  for (int dim : {1, 3, 17, 129, 257}) {
    const std::vector<T> table = to_storage<T>(random_values(1, dim, std::size_t(kVocab) * dim, 2.0f));
    DeviceBuffer<T> d_table(table);
    DeviceBuffer<int> d_tokens(tokens);
    DeviceBuffer<float> d_out(tokens.size() * dim);
    DeviceBuffer<int> d_flag(std::vector<int>{0});
    launch_embedding(d_table.get(), kVocab, dim, d_tokens.get(), int(tokens.size()), d_out.get(),
                     d_flag.get(), nullptr);

    std::vector<float> want(tokens.size() * dim);
    oracle::embedding(to_floats(table).data(), kVocab, dim, tokens.data(), int(tokens.size()),
                      want.data());
    testing::expect_close(d_out.to_host(), want, Tolerance{0.0, 0.0}, "dim=" + std::to_string(dim));
    EXPECT_EQ(d_flag.to_host()[0], 0) << "valid ids must not raise the flag";
  }
}

TEST(Embedding, OutOfRangeIdsWriteZeroRowsAndRaiseTheFlag) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  constexpr int kVocab = 4, kDim = 3;
  const std::vector<float> table = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32};
  const std::vector<int> tokens = {-1, 3, 4, 2147483647};
  DeviceBuffer<float> d_table(table);
  DeviceBuffer<int> d_tokens(tokens);
  DeviceBuffer<float> d_out(tokens.size() * kDim);  // poisoned: every element must be written
  DeviceBuffer<int> d_flag(std::vector<int>{0});
  launch_embedding(d_table.get(), kVocab, kDim, d_tokens.get(), int(tokens.size()), d_out.get(),
                   d_flag.get(), nullptr);
  const std::vector<float> want = {0, 0, 0, 30, 31, 32, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(d_out.to_host(), want);
  EXPECT_EQ(d_flag.to_host()[0], 1);
}

TEST(Embedding, ToleratesAMissingFlag) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  DeviceBuffer<float> d_table(std::vector<float>{1, 2});
  DeviceBuffer<int> d_tokens(std::vector<int>{7});
  DeviceBuffer<float> d_out(2);
  launch_embedding(d_table.get(), 1, 2, d_tokens.get(), 1, d_out.get(), nullptr, nullptr);
  EXPECT_EQ(d_out.to_host(), (std::vector<float>{0, 0}));
}

TEST(Embedding, ZeroTokensLaunchNothing) {
  EXPECT_NO_THROW(launch_embedding<float>(nullptr, 10, 4, nullptr, 0, nullptr, nullptr, nullptr));
}

TEST(Embedding, RejectsBadSizes) {
  EXPECT_THROW(launch_embedding<float>(nullptr, 10, 4, nullptr, -1, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_embedding<float>(nullptr, 0, 4, nullptr, 1, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_embedding<__half>(nullptr, 10, 0, nullptr, 1, nullptr, nullptr, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
