// Decode attention over the contiguous cache, Llama-3-8B's heads (32 query / 8 KV heads of
// 128) in fp16: batch 1, 8 and 32 at contexts 512 and 4096, and batch 1 at 16384, each by
//   v01         one block per (sequence, query head), scores in shared memory;
//   v02         one block per (sequence, KV head): the GQA group shares one read of K and V;
//   v02-splitk  v02 with a workspace: chunks of keys in parallel blocks, as many as the
//               device's occupancy calls for (attention_decode_split), then a combine kernel
//               (flash-decoding) — what fills the GPU at batch 1 (--quick: v02-split32,
//               chunks forced to 32 keys so that the simulator splits).
// GB/s counts the K and V bytes each sequence's length makes the kernel read, once (the
// quantity issue 9's target "≥ 70% of copy bandwidth at batch 32, context 4096" is about); q
// and out (< 0.1% of it at these shapes) are left out. v01 fetches each KV row once per query
// head of its group, so its GB/s is an effective rate: caches absorb part of the re-reads.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/attention.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"

namespace nanoserve::bench {
namespace {

enum class DecodeVariant { kV01, kV02, kV02SplitK };

const char* variant_name(DecodeVariant v) {
  return v == DecodeVariant::kV01 ? "v01" : v == DecodeVariant::kV02 ? "v02" : "v02-splitk";
}

// "b32 ctx4096 h32/8x128"; ragged lengths are listed ("b2 ctx80,45 …").
std::string decode_shape(const std::vector<int>& lens, const AttentionHeads& heads) {
  std::string ctx;
  bool all_equal = true;
  for (int len : lens) all_equal = all_equal && len == lens.front();
  for (std::size_t b = 0; b < (all_equal ? 1 : lens.size()); ++b) {
    ctx += (b == 0 ? "" : ",") + std::to_string(lens[b]);
  }
  return "b" + std::to_string(lens.size()) + " ctx" + ctx + " h" +
         std::to_string(heads.n_heads) + "/" + std::to_string(heads.n_kv_heads) + "x" +
         std::to_string(heads.head_dim);
}

// One sequence per entry of `lens` (each <= max_seq_len, so every length is real work).
template <typename T>
BenchCase decode_case(DecodeVariant variant, std::vector<int> lens, int max_seq_len,
                      AttentionHeads heads, int keys_per_split) {
  const int batch = static_cast<int>(lens.size());
  const int kv_dim = heads.n_kv_heads * heads.head_dim;
  double keys = 0.0;
  for (int len : lens) keys += len;
  BenchCase c;
  c.kernel = "attention_decode";
  c.version = variant == DecodeVariant::kV02SplitK && keys_per_split != kDecodeSplitAuto
                  ? "v02-split" + std::to_string(keys_per_split)
                  : variant_name(variant);
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = decode_shape(lens, heads);
  c.bytes = 2.0 * keys * kv_dim * sizeof(T);              // K and V rows below lens
  c.flops = 4.0 * keys * heads.n_heads * heads.head_dim;  // q·k and p·v, per key and head
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<float> q;          // (batch, n_heads, head_dim)
      DeviceBuffer<T> k_cache;        // (batch, max_seq_len, n_kv_heads, head_dim)
      DeviceBuffer<T> v_cache;        // (batch, max_seq_len, n_kv_heads, head_dim)
      DeviceBuffer<int> lens;         // (batch)
      DeviceBuffer<float> out;        // (batch, n_heads, head_dim)
      DeviceBuffer<float> workspace;  // split-K partial results (v02-splitk only)
    };
    auto b = std::make_shared<Buffers>();
    const std::size_t q_size = static_cast<std::size_t>(batch) * heads.n_heads * heads.head_dim;
    const std::size_t cache_size = static_cast<std::size_t>(batch) * max_seq_len * kv_dim;
    b->q = DeviceBuffer<float>(pattern<float>(q_size, 1));
    b->k_cache = DeviceBuffer<T>(pattern<T>(cache_size, 2));
    b->v_cache = DeviceBuffer<T>(pattern<T>(cache_size, 3));
    b->lens = DeviceBuffer<int>(lens);
    b->out = DeviceBuffer<float>(q_size);
    if (variant == DecodeVariant::kV02SplitK) {
      b->workspace = DeviceBuffer<float>(attention_decode_workspace_floats(
          batch, heads.n_heads, heads.head_dim, max_seq_len,
          keys_per_split == kDecodeSplitAuto ? kAttentionDecodeKeysPerSplit : keys_per_split));
    }
    const int version = variant == DecodeVariant::kV01 ? 1 : 2;
    return [=](cudaStream_t s) {
      launch_attention_decode(b->q.get(), b->k_cache.get(), b->v_cache.get(), b->lens.get(),
                              batch, max_seq_len, heads, b->out.get(),
                              DecodeWorkspace{b->workspace.get(), b->workspace.size()}, s,
                              version, keys_per_split);
    };
  };
  return c;
}

// v01 keeps every score of a sequence in shared memory and its launcher refuses more than
// 48 KiB ((head_dim + max_seq_len) floats): about 12k keys at head_dim 128.
bool v01_fits(int max_seq_len, int head_dim) {
  return (static_cast<std::size_t>(head_dim) + max_seq_len) * sizeof(float) <= 48 * 1024;
}

void add_shape(std::vector<BenchCase>& cases, const std::vector<int>& lens, int max_seq_len,
               const AttentionHeads& heads, int keys_per_split) {
  for (DecodeVariant v : {DecodeVariant::kV01, DecodeVariant::kV02, DecodeVariant::kV02SplitK}) {
    if (v == DecodeVariant::kV01 && !v01_fits(max_seq_len, heads.head_dim)) continue;
    cases.push_back(decode_case<__half>(v, lens, max_seq_len, heads, keys_per_split));
  }
}

std::vector<BenchCase> attention_decode_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  if (options.quick) {
    // The full run's GQA group of 4 and head width, two sequences of different lengths, and
    // chunks of 32 keys so that split-K really splits (3 chunks of the 80-key cache).
    add_shape(cases, {80, 45}, 80, AttentionHeads{4, 1, 128}, 32);
    return cases;
  }
  const AttentionHeads heads{32, 8, 128};
  for (int batch : {1, 8, 32}) {
    for (int context : {512, 4096, 16384}) {
      if (context == 16384 && batch != 1) continue;  // one long sequence: split-K's case
      add_shape(cases, std::vector<int>(batch, context), context, heads, kDecodeSplitAuto);
    }
  }
  return cases;
}

const bool kRegistered = register_suite("attention_decode", 90, attention_decode_cases);

}  // namespace
}  // namespace nanoserve::bench
