// KV append: k_cache[slot[r]] = T(k[r]), v_cache[slot[r]] = T(v[r]).
//
// Versions:
//   v01  one block per row, threads stride over kv_dim for K and V: coalesced reads of the fp32
//        rows and coalesced writes of the cache row. The traffic is tiny next to attention's
//        (one row per token, written once, read by every later step).
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/kv_append.h"

namespace nanoserve {
namespace {

// ---------------------------------------------------------------------------------------------
// kernels

// k, v (rows, kv_dim), slots (rows), k_cache, v_cache (num_slots, kv_dim); grid (rows)
template <typename T, typename A>
__global__ void kv_append_kernel_v01(const A* __restrict__ k, const A* __restrict__ v,
                                     const int* __restrict__ slots, int kv_dim,
                                     T* __restrict__ k_cache, T* __restrict__ v_cache,
                                     std::int64_t num_slots) {
  const int r = blockIdx.x;
  const std::int64_t slot = slots[r];
  if (slot < 0 || slot >= num_slots) return;  // padding (-1) or a bad slot: write nothing
  const A* k_row = k + static_cast<std::int64_t>(r) * kv_dim;  // (kv_dim)
  const A* v_row = v + static_cast<std::int64_t>(r) * kv_dim;  // (kv_dim)
  T* k_dst = k_cache + slot * kv_dim;                              // (kv_dim)
  T* v_dst = v_cache + slot * kv_dim;                              // (kv_dim)
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    k_dst[i] = from_float<T>(to_float(k_row[i]));
    v_dst[i] = from_float<T>(to_float(v_row[i]));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T, typename A>
void launch_kv_append(const nondeduced_t<A>* k, const nondeduced_t<A>* v, const int* slots,
                      int rows, int kv_dim,
                      T* k_cache, T* v_cache, std::int64_t num_slots, cudaStream_t stream) {
  constexpr const char* kOp = "launch_kv_append";
  kargs::require_at_least(kOp, "rows", rows, 0);
  kargs::require_at_least(kOp, "kv_dim", kv_dim, 1);
  kargs::require_at_least(kOp, "num_slots", num_slots, 0);
  if (rows == 0) return;
  constexpr int kBlock = 256;
  launch(kv_append_kernel_v01<T, A>, dim3(rows), dim3(kBlock), 0, stream, k, v, slots, kv_dim,
         k_cache, v_cache, num_slots);
}

#define NANOSERVE_INSTANTIATE_KV_APPEND(T, A)                                           \
  template void launch_kv_append<T, A>(const A*, const A*, const int*, int, int, T*, T*, \
                                       std::int64_t, cudaStream_t);
NANOSERVE_FOR_EACH_STORAGE_PAIR(NANOSERVE_INSTANTIATE_KV_APPEND)
#undef NANOSERVE_INSTANTIATE_KV_APPEND

}  // namespace nanoserve
