// How decode v02 splits a sequence's keys over thread blocks (flash-decoding; declared in
// kernels/attention.h): host code only, the split count the launchers of
// kernels/attention_decode.cu take when keys_per_split is kDecodeSplitAuto.
//
// Why a heuristic and not a constant: split-K pays a second kernel and (m, l, O) partials per
// chunk, and buys parallelism. A decode step of batch 1 on Llama-3-8B's heads has 8 thread
// blocks for 132 SMs (an H200): without a split, 94% of the GPU waits. At batch 64 the same
// grid has 512 blocks and a split only adds work. So the count follows the grid and the
// device, the way FlashAttention-2 chooses it (`num_splits_heuristic`, flash_api.cpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/attention.h"
#include "kernels/kernel_args.h"

namespace nanoserve {

DecodeSplit attention_decode_split(int sm_count, int batch, int q_len, const AttentionHeads& heads,
                                   int max_context, int split_unit, int max_splits) {
  constexpr const char* kOp = "attention_decode_split";
  kargs::require_at_least(kOp, "sm_count", sm_count, 1);
  kargs::require_at_least(kOp, "batch", batch, 0);
  kargs::require_at_least(kOp, "q_len", q_len, 1);
  kargs::require_gqa_heads(kOp, heads.n_heads, heads.n_kv_heads);
  kargs::require_at_least(kOp, "max_context", max_context, 0);
  kargs::require_at_least(kOp, "split_unit", split_unit, 1);
  kargs::require_at_least(kOp, "max_splits", max_splits, 1);
  const DecodeSplit none{1, max_context};

  // The smallest chunk: kAttentionDecodeKeysPerSplit keys, rounded up to whole units (blocks).
  const long long unit = (kAttentionDecodeKeysPerSplit + split_unit - 1) / split_unit *
                         static_cast<long long>(split_unit);
  const int units = static_cast<int>((max_context + unit - 1) / unit);
  if (units <= 1) return none;  // a short context: one chunk

  // Blocks without a split, and a wave: 2 blocks of 128 threads per SM (FlashAttention-2).
  const int rows = q_len * (heads.n_heads / heads.n_kv_heads);
  const long long blocks = static_cast<long long>(batch) * heads.n_kv_heads *
                           ((rows + kDecodeMaxRowsPerBlock - 1) / kDecodeMaxRowsPerBlock);
  const long long wave = 2LL * sm_count;
  if (blocks == 0 || static_cast<double>(blocks) >= 0.8 * static_cast<double>(wave)) return none;

  const int most = static_cast<int>(std::min<long long>({units, wave, max_splits}));
  const auto chunk_units = [units](int s) { return (units + s - 1) / s; };
  // Only split counts that change the chunk size count: 11 and 12 chunks of 64 units are both
  // 6 units per chunk, i.e. 11 chunks.
  const auto eligible = [&](int s) { return s == 1 || chunk_units(s) != chunk_units(s - 1); };
  const auto efficiency = [&](int s) {
    const double waves = static_cast<double>(blocks) * s / static_cast<double>(wave);
    return waves / std::ceil(waves);
  };
  double best = 0.0;
  for (int s = 1; s <= most; ++s) {
    if (eligible(s)) best = std::max(best, efficiency(s));
  }
  for (int s = 1; s <= most; ++s) {
    if (!eligible(s) || efficiency(s) < 0.85 * best) continue;
    if (s == 1) return none;
    const long long keys = chunk_units(s) * unit;
    return {static_cast<int>((max_context + keys - 1) / keys), static_cast<int>(keys)};
  }
  return none;
}

}  // namespace nanoserve
