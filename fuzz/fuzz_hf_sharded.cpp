// libFuzzer target: sharded Hugging Face checkpoints (config.json, model.safetensors.index.json
// and two shards) from arbitrary bytes; the format is in hf_sharded_input.h. Covers the
// config's architectures and rope_scaling, the index's weight_map and the cross-shard checks.
// Only nanoserve::Error may escape (see fuzz_llama2c_bin.cpp).
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "fuzz/hf_sharded_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nanoserve::fuzz::ShardedInput in;
  if (!nanoserve::fuzz::split_sharded_input(data, size, in)) return 0;
  try {
    nanoserve::hf_index_shards(in.index, "fuzz/model.safetensors.index.json");
  } catch (const nanoserve::Error&) {
  }
  try {
    nanoserve::load_hf_sharded_from_memory(in.config, in.index, in.shards, "fuzz");
  } catch (const nanoserve::Error&) {
  }
  return 0;
}
