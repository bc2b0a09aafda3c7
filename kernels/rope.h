#pragma once
/// \file
/// \brief Rotary position embedding (RoPE; Su et al., "RoFormer", 2021) applied in place to the
/// queries and keys of a batch of rows, each row at its own position, in both pairing
/// conventions.

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

}  // namespace nanoserve
