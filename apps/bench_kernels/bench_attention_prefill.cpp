// Prefill attention of one sequence of T = 128, 512 and 2048 new tokens (start 0, causal),
// Llama-3-8B's heads (32 query / 8 KV heads of 128), q, K, V and out all fp16 (and bf16 for
// v02/v03), as the engine's 16-bit path runs them, by
//   v01  one block per (query, head), scores in shared memory: every block re-reads its
//        whole key prefix, O(T²) reads;
//   v02  FlashAttention-2 tiles on CUDA cores: each K/V tile read once per block of query rows
//        of a GQA group, no score matrix;
//   v03  v02's tiling on the tensor cores (WMMA QKᵀ and PV, double-buffered K/V tiles).
// FLOPs are the causal ones: query t attends to t + 1 keys, 2·head_dim for q·k and as many for
// p·v per key and head. Bytes: q, K, V read and out written once. The PyTorch reference on the
// same shapes is scripts/sdpa_bench.py (torch.nn.functional.scaled_dot_product_attention,
// is_causal, GQA by repeating K/V heads), run by scripts/gpu_check.sh beside this suite; its
// JSON rows carry the same shape strings.
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

// q, K, V and out in T.
template <typename T>
BenchCase prefill_case(int version, int n_queries, AttentionHeads heads) {
  const int start = 0, max_seq_len = start + n_queries;
  const int kv_dim = heads.n_kv_heads * heads.head_dim;
  const double q_size = static_cast<double>(n_queries) * heads.n_heads * heads.head_dim;
  // Σ_t (start + t + 1): the keys each query attends to, summed.
  const double attended = static_cast<double>(n_queries) * start +
                          0.5 * static_cast<double>(n_queries) * (n_queries + 1);
  BenchCase c;
  c.kernel = "attention_prefill";
  c.version = "v0" + std::to_string(version);
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = "T" + std::to_string(n_queries) + " h" + std::to_string(heads.n_heads) + "/" +
            std::to_string(heads.n_kv_heads) + "x" + std::to_string(heads.head_dim);
  c.bytes = (2.0 * q_size + 2.0 * max_seq_len * kv_dim) * sizeof(T);
  c.flops = 4.0 * attended * heads.n_heads * heads.head_dim;
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<T> q;        // (n_queries, n_heads, head_dim)
      DeviceBuffer<T> k_cache;  // (max_seq_len, n_kv_heads, head_dim)
      DeviceBuffer<T> v_cache;  // (max_seq_len, n_kv_heads, head_dim)
      DeviceBuffer<T> out;      // (n_queries, n_heads, head_dim)
    };
    auto b = std::make_shared<Buffers>();
    const std::size_t cache_size = static_cast<std::size_t>(max_seq_len) * kv_dim;
    b->q = DeviceBuffer<T>(pattern<T>(static_cast<std::size_t>(q_size), 1));
    b->k_cache = DeviceBuffer<T>(pattern<T>(cache_size, 2));
    b->v_cache = DeviceBuffer<T>(pattern<T>(cache_size, 3));
    b->out = DeviceBuffer<T>(static_cast<std::size_t>(q_size));
    return [=](cudaStream_t s) {
      launch_attention_prefill<T, T>(b->q.get(), b->k_cache.get(), b->v_cache.get(), n_queries,
                                     start, max_seq_len, heads, b->out.get(), s, version);
    };
  };
  return c;
}

std::vector<BenchCase> attention_prefill_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  // Quick: the full run's GQA group of 4 and head width; 33 tokens leave a partial tile of
  // query rows and of keys.
  const std::vector<int> lengths = options.quick ? std::vector<int>{33}
                                                 : std::vector<int>{128, 512, 2048};
  const AttentionHeads heads = options.quick ? AttentionHeads{4, 1, 128}
                                             : AttentionHeads{32, 8, 128};
  for (int n_queries : lengths) {
    for (int v = 1; v <= kAttentionPrefillVersions; ++v) {
      cases.push_back(prefill_case<__half>(v, n_queries, heads));
    }
    // bf16: the CUDA-core tiling against the tensor cores.
    cases.push_back(prefill_case<__nv_bfloat16>(2, n_queries, heads));
    cases.push_back(prefill_case<__nv_bfloat16>(3, n_queries, heads));
  }
  return cases;
}

const bool kRegistered = register_suite("attention_prefill", 80, attention_prefill_cases);

}  // namespace
}  // namespace nanoserve::bench
