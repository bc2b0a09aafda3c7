#pragma once
/// \file
/// \brief `cooperative_groups` for the simulator: the thread block and tiled partitions of a
/// warp, as the CUDA programming guide defines them (`#include <cooperative_groups.h>` and
/// `<cooperative_groups/reduce.h>` under nvcc).
///
/// Provided: `this_thread_block()` (`sync`, `thread_rank`, `size`/`num_threads`,
/// `group_index`, `thread_index`, `group_dim`/`dim_threads`), `tiled_partition<N>(block)` for
/// N = 1, 2, 4, 8, 16, 32 (`sync`, `thread_rank`, `size`/`num_threads`, `meta_group_rank`,
/// `meta_group_size`, `shfl`, `shfl_up`, `shfl_down`, `shfl_xor`, `ballot`, `any`, `all`),
/// `cg::sync(group)`, and `cg::reduce(tile, value, op)` with `cg::plus`, `cg::less`,
/// `cg::greater`, `cg::bit_and`, `cg::bit_or`, `cg::bit_xor`.
///
/// A tile's operations are the warp intrinsics with the tile's lanes as the mask and the tile
/// size as the width, so they carry every check of kernels/sim/warp_ops.h (divergence, call
/// sites, exited lanes). `block.sync()` is `__syncthreads()`. Not simulated: grid groups
/// (`this_grid`, cooperative launch), `coalesced_threads`, `labeled_partition`, run-time
/// `tiled_partition(block, n)`, `memcpy_async` through groups.

#include <type_traits>

#include "kernels/sim/builtins.h"
#include "kernels/sim/sync_ops.h"
#include "kernels/sim/warp_ops.h"

/// \brief CUDA's cooperative groups.
namespace cooperative_groups {

/// \brief The threads of the running block.
class thread_block {
 public:
  /// \brief Waits for every thread of the block (`__syncthreads`).
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    __syncthreads(file, line);
  }
  /// \brief The calling thread's linear index in the block.
  unsigned thread_rank() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  /// \brief Threads in the block.
  unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  /// \brief Threads in the block.
  unsigned num_threads() const { return size(); }
  /// \brief `blockIdx`.
  dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  /// \brief `threadIdx`.
  dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  /// \brief `blockDim`.
  dim3 group_dim() const { return blockDim; }
  /// \brief `blockDim`.
  dim3 dim_threads() const { return blockDim; }
};

/// \brief The block of the calling thread.
inline thread_block this_thread_block() { return thread_block(); }

/// \brief A static partition of a warp into tiles of `Size` consecutive threads.
template <unsigned Size, typename Parent = void>
class thread_block_tile {
  static_assert(Size >= 1 && Size <= 32 && (Size & (Size - 1)) == 0,
                "tiled_partition: the tile size must be a power of two in [1, 32]");

 public:
  /// \brief The calling thread's rank in its tile.
  unsigned thread_rank() const { return block_rank() % Size; }
  /// \brief Threads per tile.
  static constexpr unsigned size() { return Size; }
  /// \brief Threads per tile.
  static constexpr unsigned num_threads() { return Size; }
  /// \brief Index of the tile in the block.
  unsigned meta_group_rank() const { return block_rank() / Size; }
  /// \brief Tiles in the block.
  unsigned meta_group_size() const {
    return (blockDim.x * blockDim.y * blockDim.z + Size - 1) / Size;
  }
  /// \brief Waits for the tile's threads (`__syncwarp` on the tile's lanes).
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    __syncwarp(mask(), file, line);
  }
  /// \brief `var` of tile rank `src_rank` (modulo the tile size).
  template <typename T>
  T shfl(T var, int src_rank, const char* file = __builtin_FILE(),
         int line = __builtin_LINE()) const {
    return __shfl_sync(mask(), var, src_rank, static_cast<int>(Size), file, line);
  }
  /// \brief `var` of rank `thread_rank() + delta`; the last `delta` ranks keep their own.
  template <typename T>
  T shfl_down(T var, unsigned delta, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) const {
    return __shfl_down_sync(mask(), var, delta, static_cast<int>(Size), file, line);
  }
  /// \brief `var` of rank `thread_rank() - delta`; the first `delta` ranks keep their own.
  template <typename T>
  T shfl_up(T var, unsigned delta, const char* file = __builtin_FILE(),
            int line = __builtin_LINE()) const {
    return __shfl_up_sync(mask(), var, delta, static_cast<int>(Size), file, line);
  }
  /// \brief `var` of rank `thread_rank() ^ lane_mask`.
  template <typename T>
  T shfl_xor(T var, unsigned lane_mask, const char* file = __builtin_FILE(),
             int line = __builtin_LINE()) const {
    return __shfl_xor_sync(mask(), var, static_cast<int>(lane_mask), static_cast<int>(Size), file,
                           line);
  }
  /// \brief Bit r is set iff rank r passed a non-zero predicate.
  unsigned ballot(int predicate, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) const {
    return __ballot_sync(mask(), predicate, file, line) >> lane_base();
  }
  /// \brief Non-zero iff any rank passed a non-zero predicate.
  int any(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __any_sync(mask(), predicate, file, line);
  }
  /// \brief Non-zero iff every rank passed a non-zero predicate.
  int all(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __all_sync(mask(), predicate, file, line);
  }

 private:
  static unsigned block_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  static unsigned lane_base() { return block_rank() % 32 / Size * Size; }
  static unsigned mask() {
    return Size == 32 ? 0xffffffffu : ((1u << Size) - 1u) << lane_base();
  }
};

/// \brief Splits the block into tiles of `Size` threads (a power of two, at most 32).
template <unsigned Size, typename Group>
thread_block_tile<Size> tiled_partition(const Group&) {
  static_assert(std::is_same<Group, thread_block>::value ||
                    std::is_base_of<thread_block, Group>::value ||
                    std::is_same<Group, thread_block_tile<32>>::value,
                "tiled_partition (simulator): partitions of a thread block or of a 32-thread tile");
  return thread_block_tile<Size>();
}

/// \brief Waits for the group's threads.
template <typename Group>
void sync(const Group& group, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  group.sync(file, line);
}

/// \brief a + b.
template <typename T>
struct plus {
  /// \brief The sum.
  T operator()(const T& a, const T& b) const { return a + b; }
};
/// \brief The smaller value.
template <typename T>
struct less {
  /// \brief min(a, b).
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
/// \brief The larger value.
template <typename T>
struct greater {
  /// \brief max(a, b).
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
/// \brief a & b.
template <typename T>
struct bit_and {
  /// \brief The bitwise and.
  T operator()(const T& a, const T& b) const { return a & b; }
};
/// \brief a | b.
template <typename T>
struct bit_or {
  /// \brief The bitwise or.
  T operator()(const T& a, const T& b) const { return a | b; }
};
/// \brief a ^ b.
template <typename T>
struct bit_xor {
  /// \brief The bitwise exclusive or.
  T operator()(const T& a, const T& b) const { return a ^ b; }
};

/// \brief Reduces `value` over the tile with `op`; every rank gets the result. Combines by a
/// butterfly (`shfl_xor`), so the result is the same in every rank.
template <unsigned Size, typename Parent, typename T, typename Op>
T reduce(const thread_block_tile<Size, Parent>& tile, T value, Op op,
         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  for (unsigned offset = Size / 2; offset > 0; offset /= 2) {
    value = op(value, tile.shfl_xor(value, offset, file, line));
  }
  return value;
}

}  // namespace cooperative_groups
