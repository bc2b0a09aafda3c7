// PagedAttention (chapter 2) at the shapes of the contiguous attention suites (Llama-3-8B's
// heads: 32 query / 8 KV heads of 128, fp16), so the tables compare directly. Each sequence's
// blocks are a random permutation of the pool (as after hours of serving), so the gathers
// really jump around.
// paged_decode — issue 9's target is "batch 32, context 4096, block 16: >= 70% of copy
// bandwidth on the KV bytes read, and within 10% of the contiguous kernel":
//   v01         one thread block per (sequence, query, head), scores in shared memory
//   v02         one thread block per (sequence, KV head): the GQA group shares each K/V read
//   v02-splitk  v02 with a workspace: split-K partitions as many as the device's occupancy
//               calls for (attention_decode_split: none at batch 32 on an H200, many at
//               batch 1), merged by a combine kernel — what the engine runs; fp16 and bf16 KV
//               (--quick: v02-split32, partitions forced to 32 keys so the simulator splits)
// paged_prefill — a batch of prompts, and of chunks after a cached prefix (chapter 4), q, K, V
// and out in fp16 (the engine's 16-bit path; v02/v03 in bf16 too):
//   v01         one thread block per (sequence, new token, head), scores in shared memory
//   v02         FlashAttention-2 tiles gathered through the block tables
//   v03         v02 on the tensor cores (WMMA), K/V tiles gathered by __pipeline_memcpy_async
// GB/s counts the K and V bytes below each context length once (plus q and out for prefill),
// as the contiguous suites do.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/paged_attention.h"

namespace nanoserve::bench {
namespace {

enum class PagedVariant { kV01, kV02, kV02SplitK };

const char* variant_name(PagedVariant v) {
  return v == PagedVariant::kV01 ? "v01" : v == PagedVariant::kV02 ? "v02" : "v02-splitk";
}

// A batch of `batch` sequences of `context` tokens each in a shuffled pool of fp16 blocks.
template <typename T>
struct PagedPool {
  DeviceBuffer<T> k_pool;     // (num_blocks, block_size, kv_dim)
  DeviceBuffer<T> v_pool;     // (num_blocks, block_size, kv_dim)
  DeviceBuffer<int> tables;   // (batch, blocks_per_seq)
  DeviceBuffer<int> lens;     // (batch)
  int batch = 0, blocks_per_seq = 0, num_blocks = 0, block_size = 0;

  PagedPool(int batch_, int context, int block_size_, int kv_dim)
      : batch(batch_),
        blocks_per_seq((context + block_size_ - 1) / block_size_),
        num_blocks(batch_ * blocks_per_seq),
        block_size(block_size_) {
    const std::size_t pool = std::size_t(num_blocks) * block_size * kv_dim;
    std::vector<int> ids(static_cast<std::size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(1234));
    k_pool = DeviceBuffer<T>(pattern<T>(pool, 2));
    v_pool = DeviceBuffer<T>(pattern<T>(pool, 3));
    tables = DeviceBuffer<int>(ids);
    lens = DeviceBuffer<int>(std::vector<int>(static_cast<std::size_t>(batch), context));
  }
  PagedKVView<T> view() const { return {k_pool.get(), v_pool.get(), num_blocks, block_size}; }
  DeviceBlockTables block_tables() const {
    return {tables.get(), lens.get(), batch, blocks_per_seq};
  }
};

template <typename T>
BenchCase paged_case(PagedVariant variant, int batch, int context, int q_len, int block_size,
                     AttentionHeads heads, int keys_per_split) {
  const int kv_dim = heads.n_kv_heads * heads.head_dim;
  const int blocks_per_seq = (context + block_size - 1) / block_size;
  BenchCase c;
  c.kernel = "paged_decode";
  c.version = variant == PagedVariant::kV02SplitK && keys_per_split != kDecodeSplitAuto
                  ? "v02-split" + std::to_string(keys_per_split)
                  : variant_name(variant);
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = "b" + std::to_string(batch) + " ctx" + std::to_string(context) +
            (q_len > 1 ? " q" + std::to_string(q_len) : "") + " h" +
            std::to_string(heads.n_heads) + "/" + std::to_string(heads.n_kv_heads) + "x" +
            std::to_string(heads.head_dim) + " blk" + std::to_string(block_size);
  const double keys = double(batch) * context;
  c.bytes = 2.0 * keys * kv_dim * sizeof(T);
  c.flops = 4.0 * keys * q_len * heads.n_heads * heads.head_dim;
  c.prepare = [=]() -> Launch {
    struct Buffers {
      PagedPool<T> pool;
      DeviceBuffer<float> q;          // (batch, q_len, n_heads, head_dim)
      DeviceBuffer<float> out;
      DeviceBuffer<float> workspace;  // split-K partials (v02-splitk only)
    };
    const std::size_t q_size = std::size_t(batch) * q_len * heads.n_heads * heads.head_dim;
    auto b = std::make_shared<Buffers>(Buffers{PagedPool<T>(batch, context, block_size, kv_dim),
                                               DeviceBuffer<float>(pattern<float>(q_size, 1)),
                                               DeviceBuffer<float>(q_size), {}});
    if (variant == PagedVariant::kV02SplitK) {
      b->workspace = DeviceBuffer<float>(paged_attention_decode_workspace_floats(
          batch, q_len, heads.n_heads, heads.head_dim, blocks_per_seq * block_size,
          keys_per_split == kDecodeSplitAuto ? kPagedDecodeKeysPerSplit : keys_per_split));
    }
    const int version = variant == PagedVariant::kV01 ? 1 : 2;
    return [=](cudaStream_t s) {
      launch_paged_attention_decode<T>(b->q.get(), b->pool.view(), b->pool.block_tables(), q_len,
                                       heads, b->out.get(),
                                       {b->workspace.get(), b->workspace.size()}, s, version,
                                       keys_per_split);
    };
  };
  return c;
}

// v01 keeps a sequence's scores in shared memory (48 KiB): about 12k keys at head_dim 128.
bool v01_fits(int context, int head_dim) {
  return (static_cast<std::size_t>(head_dim) + context) * sizeof(float) <= 48 * 1024;
}

void add_shape(std::vector<BenchCase>& cases, int batch, int context, int q_len, int block_size,
               const AttentionHeads& heads, int keys_per_split) {
  for (PagedVariant v : {PagedVariant::kV01, PagedVariant::kV02, PagedVariant::kV02SplitK}) {
    if (v == PagedVariant::kV01 && (!v01_fits(context, heads.head_dim) || q_len > 1)) continue;
    cases.push_back(
        paged_case<__half>(v, batch, context, q_len, block_size, heads, keys_per_split));
  }
  // bf16 KV, the split the engine runs.
  cases.push_back(paged_case<__nv_bfloat16>(PagedVariant::kV02SplitK, batch, context, q_len,
                                            block_size, heads, keys_per_split));
}

std::vector<BenchCase> paged_decode_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  if (options.quick) {
    // Group 4, head width 128, blocks of 16 and partitions of 32 keys so split-K really splits.
    add_shape(cases, 2, 80, 1, 16, AttentionHeads{4, 1, 128}, 32);
    add_shape(cases, 2, 80, 5, 16, AttentionHeads{4, 1, 128}, 32);
    return cases;
  }
  const AttentionHeads heads{32, 8, 128};
  for (int batch : {1, 8, 32}) {
    for (int context : {512, 4096, 16384}) {
      if (context == 16384 && batch != 1) continue;
      add_shape(cases, batch, context, 1, 16, heads, kDecodeSplitAuto);
    }
  }
  // Speculative verification: γ + 1 = 5 queries per sequence attend in one launch.
  add_shape(cases, 32, 4096, 5, 16, heads, kDecodeSplitAuto);
  // Block size: the target shape with blocks of 8 and 32.
  for (int block : {8, 32}) add_shape(cases, 32, 4096, 1, block, heads, kDecodeSplitAuto);
  return cases;
}

// Prefill of `fresh` new tokens behind `cached` ones in each of `batch` sequences, one launch.
template <typename T>
BenchCase paged_prefill_case(int version, int batch, int cached, int fresh, int block_size,
                             AttentionHeads heads) {
  const int kv_dim = heads.n_kv_heads * heads.head_dim, context = cached + fresh;
  const double q_size = double(batch) * fresh * heads.n_heads * heads.head_dim;
  // Σ_t (cached + t + 1) over the new tokens t of a sequence: the keys each attends to.
  const double attended = double(batch) * (double(fresh) * cached + 0.5 * fresh * (fresh + 1.0));
  BenchCase c;
  c.kernel = "paged_prefill";
  c.version = "v0" + std::to_string(version);
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = "b" + std::to_string(batch) + " T" + std::to_string(fresh) +
            (cached > 0 ? " after " + std::to_string(cached) : "") + " h" +
            std::to_string(heads.n_heads) + "/" + std::to_string(heads.n_kv_heads) + "x" +
            std::to_string(heads.head_dim) + " blk" + std::to_string(block_size);
  c.bytes = (2.0 * q_size + 2.0 * double(batch) * context * kv_dim) * sizeof(T);
  c.flops = 4.0 * attended * heads.n_heads * heads.head_dim;
  c.prepare = [=]() -> Launch {
    struct Buffers {
      PagedPool<T> pool;
      DeviceBuffer<T> q;        // (batch * fresh, n_heads, head_dim)
      DeviceBuffer<T> out;
      DeviceBuffer<int> cu;     // (batch + 1) prefix sums of the new tokens
    };
    std::vector<int> cu(static_cast<std::size_t>(batch) + 1);
    for (std::size_t i = 0; i < cu.size(); ++i) cu[i] = static_cast<int>(i) * fresh;
    const std::size_t n = static_cast<std::size_t>(q_size);
    auto b = std::make_shared<Buffers>(Buffers{PagedPool<T>(batch, context, block_size, kv_dim),
                                               DeviceBuffer<T>(pattern<T>(n, 1)),
                                               DeviceBuffer<T>(n), DeviceBuffer<int>(cu)});
    return [=](cudaStream_t s) {
      launch_paged_attention_prefill<T, T>(b->q.get(), b->cu.get(), batch * fresh, fresh,
                                        b->pool.view(), b->pool.block_tables(), heads,
                                        b->out.get(), s, version);
    };
  };
  return c;
}

std::vector<BenchCase> paged_prefill_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  for (int v = 1; v <= kPagedPrefillVersions; ++v) {
    if (options.quick) {
      // A prompt and a chunk after a cached prefix, partial tiles of rows and keys.
      cases.push_back(paged_prefill_case<__half>(v, 2, 0, 33, 16, AttentionHeads{4, 1, 128}));
      cases.push_back(paged_prefill_case<__half>(v, 2, 20, 13, 16, AttentionHeads{4, 1, 128}));
      continue;
    }
    const AttentionHeads heads{32, 8, 128};
    cases.push_back(paged_prefill_case<__half>(v, 4, 0, 512, 16, heads));     // prompts
    cases.push_back(paged_prefill_case<__half>(v, 4, 3584, 512, 16, heads));  // later chunks
    if (v >= 2) cases.push_back(paged_prefill_case<__nv_bfloat16>(v, 4, 0, 512, 16, heads));
  }
  return cases;
}

const bool kRegistered = register_suite("paged_decode", 95, paged_decode_cases);
const bool kPrefillRegistered = register_suite("paged_prefill", 96, paged_prefill_cases);

}  // namespace
}  // namespace nanoserve::bench
