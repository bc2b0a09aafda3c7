// engine::StepStaging: a step's metadata staged section by section in one pinned buffer and
// sent by one copy; sections aligned; growing keeps what was staged and says that the device
// addresses moved (what makes a captured graph stale).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ch01/engine_test_support.h"
#include "common/engine/model/step_staging.h"

namespace nanoserve::engine {
namespace {

std::vector<int> download(const int* device, std::size_t n) {
  std::vector<int> host(n);
  CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost));
  return host;
}

TEST(Ch01StepStaging, Example) {
  NANOSERVE_REQUIRE_DEVICE();
  //! [StepStaging]
  StepStaging staging;
  staging.begin();
  const std::size_t tokens = staging.add<int>(3);  // a section per part of the step
  const std::size_t slots = staging.add<int>(3);
  int* t = staging.host<int>(tokens);  // host pointers: fill after the last add
  int* s = staging.host<int>(slots);
  for (int i = 0; i < 3; ++i) t[i] = 10 + i, s[i] = 40 + i;
  staging.upload(/*stream=*/0);  // one cudaMemcpyAsync for both
  EXPECT_EQ(staging.uploads(), 1);
  // Kernels read the sections at staging.device<int>(tokens) and staging.device<int>(slots).
  //! [StepStaging]
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(download(staging.device<int>(tokens), 3), (std::vector<int>{10, 11, 12}));
  EXPECT_EQ(download(staging.device<int>(slots), 3), (std::vector<int>{40, 41, 42}));
}

TEST(Ch01StepStaging, SectionsAre16ByteAlignedAndTheSameEveryStep) {
  NANOSERVE_REQUIRE_DEVICE();
  StepStaging staging;
  for (int step = 0; step < 2; ++step) {
    staging.begin();
    EXPECT_EQ(staging.add<int>(3), 0u);
    EXPECT_EQ(staging.add<char>(1), 16u);
    EXPECT_EQ(staging.add<std::uint64_t>(2), 32u);
    EXPECT_EQ(staging.staged_bytes(), 48u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(staging.device<char>(16)) % 16, 0u);
    staging.upload(0);
  }
  EXPECT_EQ(staging.uploads(), 2);
  EXPECT_EQ(staging.generation(), 0);
}

TEST(Ch01StepStaging, GrowingKeepsTheStagedSectionsAndMovesTheDeviceBuffer) {
  NANOSERVE_REQUIRE_DEVICE();
  StepStaging staging(64);
  staging.begin();
  const std::size_t first = staging.add<int>(4);
  for (int i = 0; i < 4; ++i) staging.host<int>(first)[i] = 7 * i;
  const int* before = staging.device<int>(first);
  const std::size_t big = staging.add<int>(100);  // past 64 bytes: both buffers move
  EXPECT_EQ(staging.generation(), 1);
  EXPECT_GE(staging.capacity(), 16u + 400u);
  EXPECT_NE(staging.device<int>(first), before);
  for (int i = 0; i < 100; ++i) staging.host<int>(big)[i] = i;
  staging.upload(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(download(staging.device<int>(first), 4), (std::vector<int>{0, 7, 14, 21}));
  EXPECT_EQ(download(staging.device<int>(big), 100).back(), 99);
}

TEST(Ch01StepStaging, NothingStagedUploadsNothing) {
  NANOSERVE_REQUIRE_DEVICE();
  StepStaging staging;
  staging.begin();
  staging.upload(0);
  EXPECT_EQ(staging.uploads(), 0);
}

}  // namespace
}  // namespace nanoserve::engine
