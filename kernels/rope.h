#pragma once
/// \file
/// \brief Rotary position embedding (RoPE; Su et al., "RoFormer", 2021) applied to the queries
/// and keys of a batch of rows, each row at its own position, in both pairing conventions.
///
/// | version | idea it adds |
/// |---|---|
/// | v01 `launch_rope` | in place on q and k; one block per row shares the row's (cos, sin) table |
/// | v02 `launch_rope_kv_append` | fused with the KV append: reads the QKV projection, writes rotated q and the cache rows of k and v |

#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

namespace nanoserve {

/// \brief Which two values of a head form RoPE pair i — the kernel layer's mirror of
/// `RopeStyle` in common/model_config.h (kernels/ depends on no other part of the project, so
/// the engine maps one onto the other).
///
///     head_dim = 8     pair:  0      1      2      3
///     kAdjacentPairs        (x0,x1) (x2,x3) (x4,x5) (x6,x7)    llama2.c, GGUF llama
///     kRotateHalf           (x0,x4) (x1,x5) (x2,x6) (x3,x7)    Hugging Face, GPT-NeoX
enum class RopePairing {
  kAdjacentPairs,  ///< pair (2i, 2i+1)
  kRotateHalf,     ///< pair (i, i + head_dim/2)
};

/// \brief Largest head width the RoPE launcher accepts (its frequency table travels in the
/// kernel's parameters).
inline constexpr int kRopeMaxHeadDim = 256;

/// \brief Rotates every head of every row of `q` and `k` in place by that row's position:
/// pair i turns by `position * theta^(-2i / head_dim)`; the same meaning as `oracle::rope`
/// applied to q and to k.
///
/// The angle is formed exactly as the oracle (and llama2.c, and Hugging Face) form it: the
/// frequencies `1 / theta^(2i / head_dim)` are computed once on the host in fp32 with the same
/// expression, and the kernel multiplies `float(position) * freq` in fp32. A frequency that is
/// one ulp off would move the angle at position 4096 by ~2e-4 rad — larger than the whole
/// tolerance a kernel test allows — so the device's `powf` is deliberately not used. Each pair
/// is widened to fp32, rotated in fp32 and rounded once to A.
/// \tparam A storage type of q and k: float, __half or __nv_bfloat16
/// \param q          (rows, n_heads, head_dim) queries in A, updated in place
/// \param k          (rows, n_kv_heads, head_dim) keys in A, updated in place
/// \param positions  (rows) the token position of each row, device memory
/// \param rows       number of rows (0 launches nothing)
/// \param n_heads    query heads per row (>= 0)
/// \param n_kv_heads key heads per row (>= 0)
/// \param head_dim   values per head: even, in [2, kRopeMaxHeadDim]
/// \param theta      RoPE base (> 0)
/// \param pairing    which values form a pair
/// \param stream     CUDA stream
/// \throws std::invalid_argument for negative sizes, an odd or too large head_dim, theta <= 0
template <typename A = float>
void launch_rope(nondeduced_t<A>* q, nondeduced_t<A>* k, const int* positions, int rows,
                 int n_heads, int n_kv_heads,
                 int head_dim, float theta, RopePairing pairing, cudaStream_t stream);

/// \brief The same rotation with pair i turning at `inv_freq[i]` radians per position, for
/// models whose frequencies are rescaled (`rope_scaling` linear or llama3: the table of
/// `rope_frequencies(config)` in common/). The table is copied into the kernel's parameters.
/// \tparam A storage type of q and k: float, __half or __nv_bfloat16
/// \param q          (rows, n_heads, head_dim) queries in A, updated in place
/// \param k          (rows, n_kv_heads, head_dim) keys in A, updated in place
/// \param positions  (rows) the token position of each row, device memory
/// \param rows       number of rows (0 launches nothing)
/// \param n_heads    query heads per row (>= 0)
/// \param n_kv_heads key heads per row (>= 0)
/// \param head_dim   values per head: even, in [2, kRopeMaxHeadDim]
/// \param inv_freq   (head_dim / 2) host array, every value finite and > 0
/// \param pairing    which values form a pair
/// \param stream     CUDA stream
/// \throws std::invalid_argument as the theta form, or for a missing or non-positive frequency
template <typename A = float>
void launch_rope(nondeduced_t<A>* q, nondeduced_t<A>* k, const int* positions, int rows,
                 int n_heads, int n_kv_heads,
                 int head_dim, const float* inv_freq, RopePairing pairing, cudaStream_t stream);

/// \brief Where the fused RoPE + KV append (`launch_rope_kv_append`) reads a batch's
/// projections: row r's query at `q + r · q_stride`, its key at `k + r · kv_stride`, its value
/// at `v + r · kv_stride`. One (rows, q_dim + 2·kv_dim) QKV buffer — the output of the fused
/// QKV projection — is `{qkv, qkv + q_dim, qkv + q_dim + kv_dim, q_dim + 2·kv_dim, same}`;
/// three separate buffers have strides q_dim and kv_dim. The biases (Qwen2's, fp32, or null)
/// are added to each row in fp32 before the rotation.
template <typename A>
struct QkvRows {
  const A* q = nullptr;          ///< row 0's query heads (n_heads, head_dim)
  const A* k = nullptr;          ///< row 0's key heads (n_kv_heads, head_dim)
  const A* v = nullptr;          ///< row 0's value heads (n_kv_heads, head_dim)
  std::int64_t q_stride = 0;     ///< elements from one row's query to the next
  std::int64_t kv_stride = 0;    ///< elements from one row's key (value) to the next
  const float* q_bias = nullptr;  ///< (n_heads · head_dim) added to every query, or null
  const float* k_bias = nullptr;  ///< (n_kv_heads · head_dim) added to every key, or null
  const float* v_bias = nullptr;  ///< (n_kv_heads · head_dim) added to every value, or null
};

/// \brief The KV cache rows the fused RoPE + KV append writes, as `launch_kv_append`'s: row r's
/// key and value go to row `slots[r]` of the (num_slots, kv_dim) caches; a slot outside
/// `[0, num_slots)` (-1: a padding row) writes nothing.
template <typename T>
struct KVCacheRows {
  T* k_cache = nullptr;          ///< (num_slots, kv_dim) keys in storage type T
  T* v_cache = nullptr;          ///< (num_slots, kv_dim) values in storage type T
  const int* slots = nullptr;    ///< (rows) destination row of each input row, device memory
  std::int64_t num_slots = 0;    ///< rows of each cache
};

/// \brief v02, RoPE fused with the KV append: for every row, the queries rotated into `q_out`
/// and the keys rotated — and the values copied — straight into their cache slot, in one
/// launch. The same values as `launch_rope` on q and k, then `launch_kv_append` — bitwise when
/// the activations are fp32 or the cache is in A; otherwise with one rounding less (the rotated
/// key goes to the cache type without first being rounded to A). Biases, when given, are added
/// in fp32 before the rotation (and to the values before they are stored).
/// \tparam T storage type of the cache: float, __half or __nv_bfloat16
/// \tparam A storage type of the activations: float, __half or __nv_bfloat16
/// \param in         the rows' queries, keys and values (and biases), see QkvRows
/// \param positions  (rows) the token position of each row, device memory
/// \param rows       number of rows (0 launches nothing)
/// \param n_heads    query heads per row (>= 0)
/// \param n_kv_heads key/value heads per row (>= 1)
/// \param head_dim   values per head: even, in [2, kRopeMaxHeadDim]
/// \param inv_freq   (head_dim / 2) host array of pair frequencies, each finite and > 0
/// \param pairing    which values form a pair
/// \param q_out      (rows, n_heads, head_dim) rotated queries in A; must not overlap `in`
/// \param cache      where the keys and values go, see KVCacheRows
/// \param stream     CUDA stream
/// \throws std::invalid_argument for negative sizes, a bad head_dim or frequency, strides
/// shorter than a row, or null buffers
template <typename T, typename A>
void launch_rope_kv_append(const QkvRows<A>& in, const int* positions, int rows, int n_heads,
                           int n_kv_heads, int head_dim, const float* inv_freq,
                           RopePairing pairing, A* q_out, const KVCacheRows<T>& cache,
                           cudaStream_t stream);

}  // namespace nanoserve
