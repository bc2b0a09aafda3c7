#pragma once
/// \file
/// \brief The device side of paged addressing: finding the cache row ("slot") of a sequence's
/// logical key through its block table, with a division by the block size that costs a
/// multiply instead of a runtime integer division. `PagedKV` (kernels/attention_kv.cuh) is the
/// attention kernels' addressing policy built on it.
///
///     key j of sequence b  ─►  logical block j / block_size, offset j % block_size
///                          ─►  slot = block_tables[b][j / block_size] * block_size + offset
///                          ─►  K row at k_cache + (slot * n_kv_heads + g) * head_dim

#include <cstdint>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief `n / d` and `n % d` for a divisor fixed at launch time and 0 <= n < 2^31, by a
/// multiply-high and a shift (Granlund & Montgomery, "Division by invariant integers using
/// multiplication", 1994; the `FastDivmod` of CUTLASS).
///
/// A GPU has no integer divider: `n / d` with a run-time `d` compiles to ~20 instructions
/// (a float reciprocal and correction steps). The paged kernels divide every key index by
/// the block size, so they precompute, on the host, s = ceil(log2 d) and the magic number
///
///     m = floor(2^32 (2^s - d) / d) + 1     (fits in 32 bits for every d >= 1)
///
/// and then q = (umulhi(n, m) + n) >> s, exact for all n < 2^31 (the sum cannot overflow
/// because umulhi(n, m) <= n). For d = 2^s, m = 1 and q = n >> s.
struct FastDivmod {
  int divisor = 1;          ///< d >= 1
  unsigned multiplier = 1;  ///< m
  int shift = 0;            ///< s

  /// \brief The identity division (d = 1).
  FastDivmod() = default;
  /// \brief Precomputes m and s for `d` (the caller checks d >= 1).
  explicit FastDivmod(int d) : divisor(d) {
    while ((1ll << shift) < d) ++shift;
    multiplier = static_cast<unsigned>(((1ull << 32) * ((1ull << shift) - d)) / d + 1);
  }
  /// \brief n / d for 0 <= n < 2^31.
  __host__ __device__ __forceinline__ int div(int n) const {
    // The portable umulhi: nvcc turns the 64-bit product's high word into one IMAD.HI.
    const unsigned hi = static_cast<unsigned>(
        (static_cast<unsigned long long>(static_cast<unsigned>(n)) * multiplier) >> 32);
    return static_cast<int>((hi + static_cast<unsigned>(n)) >> shift);
  }
  /// \brief n % d given q = n / d.
  __host__ __device__ __forceinline__ int mod(int n, int q) const { return n - q * divisor; }
};

/// \brief The cache row of key `j` of one sequence, or -1 when its block table names a block
/// outside `[0, num_blocks)`: table entries are device data, so a bad one cannot throw; the
/// kernels then read NaN instead of memory outside the pool.
/// \param table      (max_blocks_per_seq) physical block ids of the sequence
/// \param block_size divides key indices by the block size
/// \param num_blocks blocks in the pool
/// \param j          logical key index, 0 <= j < max_blocks_per_seq * block_size
__device__ __forceinline__ std::int64_t paged_slot(const int* __restrict__ table,
                                                   const FastDivmod& block_size, int num_blocks,
                                                   int j) {
  // BEGIN EXERCISE ch02.4 "Paged gather: the cache row of a key through its block table" points=15 minutes=20
  // HINT: Key j lives in logical block j / block_size at offset j % block_size (use
  // HINT: block_size.div and block_size.mod). Look the physical block up in `table`; return -1
  // HINT: for an id outside [0, num_blocks), else block * block_size.divisor + offset.
  // STUB: (void)table; (void)block_size; (void)num_blocks; (void)j;
  // STUB: return -1;
  const int logical = block_size.div(j);
  const int block = table[logical];
  if (block < 0 || block >= num_blocks) return -1;
  return static_cast<std::int64_t>(block) * block_size.divisor + block_size.mod(j, logical);
  // END EXERCISE
}

/// \brief Sixteen 0xFF bytes: NaN in every storage type (fp32, fp16 and bf16 alike), what a
/// vector load from a bad block id is replaced with.
__device__ __forceinline__ uint4 nan_vector() {
  return make_uint4(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
}

}  // namespace nanoserve
