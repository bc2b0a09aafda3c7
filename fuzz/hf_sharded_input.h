#pragma once
/// \file
/// \brief The input format of fuzz_hf_sharded: a sharded Hugging Face checkpoint in one byte
/// string, shared by the fuzzer, the seed writer and the seed test.
///
///     config.json text | NUL | index.json text | NUL | uint64 LE n | shard 1 (n bytes) | shard 2
///
/// The shards are named model-00001-of-00002.safetensors and model-00002-of-00002.safetensors
/// (what an index must name to find them). A length past the end gives shard 1 all the rest.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/loaders/hf_loader.h"

namespace nanoserve::fuzz {

/// \brief The two shard names the format provides.
inline const char* const kShardNames[2] = {"model-00001-of-00002.safetensors",
                                           "model-00002-of-00002.safetensors"};

/// \brief A split input: the two texts and the two shards (pointing into the input).
struct ShardedInput {
  std::string config;          ///< config.json text
  std::string index;           ///< model.safetensors.index.json text
  std::vector<HfShard> shards; ///< the two shards
};

/// \brief Splits `data` (see the file comment); false when a NUL separator is missing.
inline bool split_sharded_input(const uint8_t* data, size_t size, ShardedInput& out) {
  const auto* end = data + size;
  const auto* nul1 = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  if (nul1 == nullptr) return false;
  const auto* nul2 = static_cast<const uint8_t*>(std::memchr(nul1 + 1, 0, size_t(end - nul1 - 1)));
  if (nul2 == nullptr) return false;
  out.config.assign(reinterpret_cast<const char*>(data), size_t(nul1 - data));
  out.index.assign(reinterpret_cast<const char*>(nul1 + 1), size_t(nul2 - nul1 - 1));
  const uint8_t* p = nul2 + 1;
  uint64_t n = 0;
  if (end - p >= 8) {
    for (int i = 0; i < 8; ++i) n |= uint64_t(p[i]) << (8 * i);
    p += 8;
  }
  const size_t rest = size_t(end - p);
  const size_t first = n < rest ? size_t(n) : rest;
  out.shards = {{kShardNames[0], p, first}, {kShardNames[1], p + first, rest - first}};
  return true;
}

/// \brief The input for `c` (which must have exactly two shards, named as above).
inline std::vector<uint8_t> sharded_input(const HfShardedCheckpoint& c) {
  std::vector<uint8_t> out(c.config_json.begin(), c.config_json.end());
  out.push_back(0);
  out.insert(out.end(), c.index_json.begin(), c.index_json.end());
  out.push_back(0);
  const uint64_t n = c.shards.at(0).second.size();
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(n >> (8 * i)));
  out.insert(out.end(), c.shards[0].second.begin(), c.shards[0].second.end());
  out.insert(out.end(), c.shards.at(1).second.begin(), c.shards[1].second.end());
  return out;
}

}  // namespace nanoserve::fuzz
