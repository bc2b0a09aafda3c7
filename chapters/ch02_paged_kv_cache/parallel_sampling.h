#pragma once
/// \file
/// \brief The `parallel-sampling` scenario: n samples of one prompt (each with its own seed),
/// decoded together in one batch per step through the kernels over a paged KV cache — once with
/// every sample holding its own copy of the prompt's KV, once sharing it (`KVCacheManager::fork`)
/// with copy-on-write of the partially filled last block (the pass performs the `ForwardBatch::block_copies`).
///
///     unshared   s0 [P P P P][P P . .]    s1 [P P P P][P P . .]   …  n × prompt blocks, n prefills
///     shared     s0 ─┐
///                s1 ─┼─► [P P P P][P P . .]   ref_cnt n, one prefill
///                s2 ─┘         │ first write of s0: copy to a fresh block, then write there
///                              ▼ (the last writer finds ref_cnt 1 and writes in place)
///
/// Since each sample draws its tokens from its own counter-based RNG (seed, position), sharing
/// must not change a single token.

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/engine/model/device_model.h"
#include "kernels/dtype.cuh"

namespace nanoserve::ch02 {

/// \brief The samples and the pool.
struct ParallelSamplingConfig {
  int n = 4;                 ///< samples of the prompt
  int max_new_tokens = 24;   ///< tokens per sample (fewer if one is a stop token)
  int block_size = 16;       ///< positions per KV block
  int num_blocks = 256;      ///< blocks in the pool
  float temperature = 0.8f;  ///< sampling temperature (> 0, or every sample is the same)
  float top_p = 0.95f;       ///< nucleus sampling
  std::uint64_t seed = 42;   ///< sample i uses seed + i
  std::vector<int> stop_tokens;  ///< a sample ends after drawing one of these
  std::optional<DType> kv_dtype;  ///< KV cache storage type; unset = the model's
};

/// \brief One mode's outcome.
struct ParallelSamplingRun {
  bool shared = false;                      ///< fork + copy-on-write, or n separate prompts
  std::vector<std::vector<int>> samples;    ///< (n) generated tokens of each sample
  int prompt_blocks = 0;      ///< blocks in use right after the prompt's prefill
  int peak_blocks = 0;        ///< most blocks in use at once
  long long block_copies = 0; ///< copy-on-write block copies performed
  long long prefill_rows = 0; ///< prompt rows computed
  long long decode_rows = 0;  ///< decode rows computed
  int decode_steps = 0;       ///< batched decode passes
  double cpu_seconds = 0;     ///< process CPU time
};

/// \brief Runs the n samples of `prompt` in one mode. Throws `InvalidArgument` for bad sizes
/// or a prompt that leaves no room in the context, and `BlockPoolExhausted` when the pool is
/// too small.
ParallelSamplingRun run_parallel_sampling(const engine::DeviceModel& model,
                                          const std::vector<int>& prompt,
                                          const ParallelSamplingConfig& config, bool shared);

/// \brief Prints both modes side by side and whether every sample is identical in both, and
/// appends the records. `bytes_per_block` converts blocks to bytes. Returns that equality.
bool print_parallel_sampling(const ParallelSamplingRun& unshared, const ParallelSamplingRun& shared,
                             const ParallelSamplingConfig& config, int prompt_tokens,
                             std::int64_t bytes_per_block, nlohmann::json& records);

}  // namespace nanoserve::ch02
