// The fuzzers' seed corpora (fuzz/seeds/, written by fuzz/make_fuzz_seeds.cpp) must stay valid
// inputs: a seed the loaders reject would start the fuzzer at the first validation check
// instead of deep inside the loader.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/llama2c_loader.h"
#include "fuzz/hf_sharded_input.h"
#include "test_support.h"

namespace nanoserve {
namespace {

namespace fs = std::filesystem;

/// Seed files of one corpus that must load; tests run from the repository root (see
/// tests/CMakeLists.txt).
std::vector<std::string> seeds(const std::string& corpus) {
  std::vector<std::string> files;
  const fs::path dir = fs::path("fuzz/seeds") / corpus;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    // deep_* seeds are bad input on purpose (test_bad_input_json.cpp checks they are refused).
    if (entry.path().filename().string().rfind("deep_", 0) == 0) continue;
    files.push_back(entry.path().string());
  }
  EXPECT_FALSE(files.empty()) << "no seeds in " << dir << " (cwd " << fs::current_path() << ")";
  return files;
}

TEST(FuzzSeeds, Llama2cSeedsLoad) {
  for (const std::string& path : seeds("llama2c_bin")) {
    EXPECT_NO_THROW(load_llama2c(path)) << path;
  }
}

TEST(FuzzSeeds, GgufSeedsLoad) {
  int with_vocab = 0;
  for (const std::string& path : seeds("gguf")) {
    EXPECT_NO_THROW(load_gguf(path)) << path;
    if (path.find("no_vocab") == std::string::npos) {
      EXPECT_NO_THROW(load_gguf_vocabulary(path)) << path;
      ++with_vocab;
    }
  }
  EXPECT_GT(with_vocab, 0);
}

TEST(FuzzSeeds, SafetensorsSeedsLoad) {
  for (const std::string& path : seeds("safetensors")) {
    const std::vector<uint8_t> bytes = testing::read_bytes(path);
    const auto* nul = static_cast<const uint8_t*>(std::memchr(bytes.data(), 0, bytes.size()));
    ASSERT_NE(nul, nullptr) << path << ": expected config.json, NUL, safetensors";
    const size_t split = size_t(nul - bytes.data());
    const std::string config(bytes.begin(), bytes.begin() + long(split));
    EXPECT_NO_THROW(load_hf_from_memory(config, nul + 1, bytes.size() - split - 1, path)) << path;
  }
}

TEST(FuzzSeeds, ShardedHfSeedsLoad) {
  for (const std::string& path : seeds("hf_sharded")) {
    const std::vector<uint8_t> bytes = testing::read_bytes(path);
    fuzz::ShardedInput in;
    ASSERT_TRUE(fuzz::split_sharded_input(bytes.data(), bytes.size(), in)) << path;
    EXPECT_NO_THROW(load_hf_sharded_from_memory(in.config, in.index, in.shards, path)) << path;
  }
}

}  // namespace
}  // namespace nanoserve
