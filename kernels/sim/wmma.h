#pragma once
/// \file
/// \brief Tensor cores for the simulator: `nvcuda::wmma` as the CUDA programming guide defines it
/// (`#include <mma.h>` under nvcc) for the shapes m16n16k16, m32n8k16 and m8n32k16, `__half` and
/// `__nv_bfloat16` inputs, `float` and (for `__half` inputs) `__half` accumulators.
///
/// A fragment is what it is on a GPU: each lane holds `num_elements` values in `x[]` (the same
/// counts as CUDA 13's mma.h, so an fp16 A or B fragment holds some matrix elements in more than
/// one lane, as the hardware does). Which lane holds which element is unspecified in CUDA; the
/// simulator's mapping and its checks are in kernels/sim/README.md ("Tensor cores"). In short:
/// - slot `s = lane * num_elements + i` holds matrix element `p(s) mod (rows·cols)` in row-major
///   order, with `p` the identity, or, with `NANOSERVE_SIM_WMMA_MAPPING=permuted`, the
///   bijection `p(s) = (97 s + 29) mod (32 · num_elements)`: a kernel that reads or writes `x[i]`
///   for anything but element-wise work gives different results under the two mappings (the
///   second run of the kernel tests uses the permuted one);
/// - `mma_sync` checks that the copies of one element in different lanes are equal, which an
///   element-wise operation keeps and a mapping-dependent one does not: a launch error.
///
/// Every `_sync` function is warp-collective: it is a rendezvous of the warp's 32 lanes (the
/// scheduler's warp operation, so a call in divergent code is caught like a divergent shuffle),
/// and all lanes must pass the same pointer, `ldm` and layout. A partial warp, lanes that have
/// exited, different arguments, a pointer that is not 32-byte aligned or an `ldm` that is not a
/// multiple of 16 bytes: each is a launch error with a message.
///
/// Arithmetic: products of the input values (exact in fp32), accumulated in fp32 in `k` order,
/// one rounding per product (`fmaf`); a `__half` accumulator is widened to fp32 and the result
/// rounded to `__half` once, to nearest even.

#include <cstdint>
#include <type_traits>

#include "kernels/sim/builtins.h"
#include "kernels/sim/warp_ops.h"

/// \cond NS_SIM_INTERNAL
namespace nanoserve::sim {

/// \brief How fragment slots map onto matrix elements (see the file comment).
enum class WmmaMapping { kLinear, kPermuted };

/// \brief The mapping in use: `NANOSERVE_SIM_WMMA_MAPPING` (`linear`, the default, or
/// `permuted`), unless a test set it.
WmmaMapping wmma_mapping();
/// \brief Overrides the mapping (tests).
void set_wmma_mapping(WmmaMapping mapping);

/// \brief What one lane brings to a warp-collective WMMA call.
struct WmmaCall {
  const char* name;        ///< e.g. "wmma::load_matrix_sync"
  std::uint64_t args;      ///< hash of the arguments that must agree across lanes
  const void* lane_data;   ///< the lane's data, readable by the other lanes until the call ends
  Site site;               ///< the call site
};

/// \brief First half of a collective call: rendezvous of all 32 lanes, then checks that every
/// lane of the warp takes part with the same arguments (throws, i.e. fails the launch, if not).
/// Returns the 32 lanes' `lane_data`, valid until `wmma_leave`.
const void* const* wmma_enter(const WmmaCall& call);
/// \brief Between `wmma_enter` and `wmma_leave`: true for exactly one lane of the warp (the
/// first to ask), which then computes the whole result into `wmma_warp_scratch()` for all lanes.
bool wmma_claim();
/// \brief 256 floats per warp (an M×N result of any supported shape), valid until `wmma_leave`.
float* wmma_warp_scratch();
/// \brief Second half: rendezvous again, so that no lane's data is reused while others read it.
void wmma_leave(const WmmaCall& call);
/// \brief Throws the launch error for a failed check of `call`.
[[noreturn]] void wmma_fail(const WmmaCall& call, const char* what);

/// \brief The lane of the running simulated thread.
inline int wmma_lane() {
  return static_cast<int>((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) %
                          32u);
}

/// \brief Matrix element (row-major index) held by slot `slot` of `slots`.
inline int wmma_element(int slot, int slots, int elements, WmmaMapping mapping) {
  const int s = mapping == WmmaMapping::kPermuted ? (97 * slot + 29) & (slots - 1) : slot;
  return s % elements;
}

/// \brief Values as fp32 and back.
inline float wmma_to_float(float v) { return v; }
inline float wmma_to_float(__half v) { return __half2float(v); }
inline float wmma_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
T wmma_from_float(float v) {
  if constexpr (std::is_same<T, float>::value) {
    return v;
  } else {
    return __float2half_rn(v);
  }
}
/// \brief Raw bits, for the copy-consistency check.
template <typename T>
std::uint32_t wmma_bits(T v) {
  std::uint32_t bits = 0;
  static_assert(sizeof(T) <= 4, "fragment elements are at most 4 bytes");
  __builtin_memcpy(&bits, static_cast<const void*>(&v), sizeof(T));
  return bits;
}

}  // namespace nanoserve::sim
/// \endcond

/// \brief CUDA's namespace for warp-level matrix operations.
namespace nvcuda {
/// \brief Warp matrix multiply-accumulate (tensor cores), simulated.
namespace wmma {

/// \brief Fragment layout tag: row-major A or B.
struct row_major;
/// \brief Fragment layout tag: column-major A or B.
struct col_major;
/// \brief Fragment use tag: the M×K multiplicand.
struct matrix_a;
/// \brief Fragment use tag: the K×N multiplicand.
struct matrix_b;
/// \brief Fragment use tag: the M×N accumulator.
struct accumulator;

/// \brief Memory layout of an accumulator load or store.
enum layout_t { mem_row_major, mem_col_major };

/// \cond NS_SIM_INTERNAL
namespace detail {

template <typename Use, int M, int N, int K>
struct Dims;
template <int M, int N, int K>
struct Dims<matrix_a, M, N, K> {
  static constexpr int kRows = M, kCols = K;
};
template <int M, int N, int K>
struct Dims<matrix_b, M, N, K> {
  static constexpr int kRows = K, kCols = N;
};
template <int M, int N, int K>
struct Dims<accumulator, M, N, K> {
  static constexpr int kRows = M, kCols = N;
};

template <int M, int N, int K>
constexpr bool kSupportedShape =
    (M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) ||
    (M == 8 && N == 32 && K == 16);

// Elements per lane, as in CUDA 13's mma.h: fp16 multiplicands always 16 (replicated), bf16
// ones rows·cols / 32, accumulators 8.
template <typename Use, int M, int N, int K, typename T>
constexpr int element_count() {
  if constexpr (std::is_same<Use, accumulator>::value) {
    return 8;
  } else if constexpr (std::is_same<T, __half>::value) {
    return 16;
  } else {
    return Dims<Use, M, N, K>::kRows * Dims<Use, M, N, K>::kCols / 32;
  }
}

}  // namespace detail
/// \endcond

/// \brief One lane's share of a matrix tile: `x[0 .. num_elements)`.
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
  static_assert(detail::kSupportedShape<M, N, K>,
                "wmma (simulator): shapes m16n16k16, m32n8k16 and m8n32k16 only");
  static_assert(std::is_same<Use, accumulator>::value
                    ? (std::is_same<T, float>::value || std::is_same<T, __half>::value) &&
                          std::is_void<Layout>::value
                    : (std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value) &&
                          (std::is_same<Layout, row_major>::value ||
                           std::is_same<Layout, col_major>::value),
                "wmma (simulator): matrix_a/matrix_b of __half or __nv_bfloat16 with row_major or "
                "col_major; accumulators of float or __half without a layout");

 public:
  /// \brief Elements this lane holds.
  enum { num_elements = detail::element_count<Use, M, N, K, T>() };
  /// \brief Storage elements (equal to num_elements for these types).
  enum { num_storage_elements = num_elements };
  /// \brief The element type.
  typedef T element_type;
  /// \brief The storage element type.
  typedef T storage_element_type;
  /// \brief This lane's elements.
  T x[num_elements];
};

/// \cond NS_SIM_INTERNAL
namespace detail {

template <typename Use, int M, int N, int K, typename T, typename Layout>
constexpr int rows(const fragment<Use, M, N, K, T, Layout>&) {
  return Dims<Use, M, N, K>::kRows;
}
template <typename Use, int M, int N, int K, typename T, typename Layout>
constexpr int cols(const fragment<Use, M, N, K, T, Layout>&) {
  return Dims<Use, M, N, K>::kCols;
}

inline std::uint64_t hash_args(const void* p, unsigned ldm, int layout) {
  return reinterpret_cast<std::uintptr_t>(p) * 0x9e3779b97f4a7c15ull ^
         (static_cast<std::uint64_t>(ldm) << 8) ^ static_cast<std::uint64_t>(layout);
}

// Checks shared by loads and stores; `row_major_memory` says how (row, col) maps to memory.
template <typename Frag, typename Mem>
void check_pointer(const nanoserve::sim::WmmaCall& call, const Mem* p, unsigned ldm,
                   const Frag& f, bool row_major_memory) {
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0) {
    nanoserve::sim::wmma_fail(call, "needs a 256-bit (32-byte) aligned pointer");
  }
  if ((ldm * sizeof(Mem)) % 16 != 0) {
    nanoserve::sim::wmma_fail(call, "needs ldm to be a multiple of 16 bytes (8 __half or 4 float)");
  }
  const unsigned needed = static_cast<unsigned>(row_major_memory ? cols(f) : rows(f));
  if (ldm < needed) nanoserve::sim::wmma_fail(call, "has ldm smaller than the tile");
}

// Loads or stores the lane's slots. `to_memory` picks the direction.
template <typename Frag, typename Mem>
void move(Frag& f, Mem* p, unsigned ldm, bool row_major_memory, bool to_memory) {
  constexpr int n = Frag::num_elements;
  const int r = rows(f);
  const int c = cols(f);
  const nanoserve::sim::WmmaMapping mapping = nanoserve::sim::wmma_mapping();
  const int lane = nanoserve::sim::wmma_lane();
  for (int i = 0; i < n; ++i) {
    const int e = nanoserve::sim::wmma_element(lane * n + i, 32 * n, r * c, mapping);
    const int row = e / c;
    const int col = e % c;
    Mem* at = p + (row_major_memory ? static_cast<std::size_t>(row) * ldm + col
                                    : static_cast<std::size_t>(col) * ldm + row);
    if (to_memory) {
      *at = f.x[i];
    } else {
      f.x[i] = *at;
    }
  }
}

// Gathers one operand of mma_sync from the 32 lanes into a dense row-major fp32 matrix,
// checking that the copies of each element agree.
template <typename Frag>
void gather(const nanoserve::sim::WmmaCall& call, const void* const* lanes,
            const Frag* (*pick)(const void*), float* dense) {
  constexpr int n = Frag::num_elements;
  const Frag* first = pick(lanes[0]);
  const int elements = rows(*first) * cols(*first);
  const nanoserve::sim::WmmaMapping mapping = nanoserve::sim::wmma_mapping();
  std::uint32_t seen[512];
  bool have[512] = {};
  for (int lane = 0; lane < 32; ++lane) {
    const Frag& f = *pick(lanes[lane]);
    for (int i = 0; i < n; ++i) {
      const int e = nanoserve::sim::wmma_element(lane * n + i, 32 * n, elements, mapping);
      const std::uint32_t bits = nanoserve::sim::wmma_bits(f.x[i]);
      if (!have[e]) {
        have[e] = true;
        seen[e] = bits;
        dense[e] = nanoserve::sim::wmma_to_float(f.x[i]);
      } else if (seen[e] != bits) {
        nanoserve::sim::wmma_fail(
            call,
            "finds two lanes holding different values for one matrix element: the kernel "
            "changed fragment elements in a way that depends on the unspecified element-to-lane "
            "mapping (only element-wise operations on x[] are portable)");
      }
    }
  }
}

template <typename A, typename B, typename C>
struct MmaLane {
  const A* a;
  const B* b;
  const C* c;
};

}  // namespace detail
/// \endcond

/// \brief Sets every element of `f` to `v`.
template <typename Use, int M, int N, int K, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& v) {
  const T value = static_cast<T>(v);
  for (int i = 0; i < fragment<Use, M, N, K, T, Layout>::num_elements; ++i) f.x[i] = value;
}

/// \brief Loads a matrix_a / matrix_b tile from `p` (leading dimension `ldm` elements), in the
/// fragment's layout. Warp-collective.
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& a, const T* p, unsigned ldm,
                      const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(!std::is_same<Use, accumulator>::value,
                "wmma: an accumulator load takes a layout_t argument");
  constexpr bool row = std::is_same<Layout, row_major>::value;
  const nanoserve::sim::WmmaCall call{"wmma::load_matrix_sync", detail::hash_args(p, ldm, row),
                                      nullptr, {file, line}};
  nanoserve::sim::wmma_enter(call);
  detail::check_pointer(call, p, ldm, a, row);
  detail::move(a, const_cast<T*>(p), ldm, row, false);
  nanoserve::sim::wmma_leave(call);
}

/// \brief Loads an accumulator tile in the given memory layout. Warp-collective.
template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& c, const T* p, unsigned ldm,
                      layout_t layout, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  const nanoserve::sim::WmmaCall call{"wmma::load_matrix_sync", detail::hash_args(p, ldm, layout),
                                      nullptr, {file, line}};
  nanoserve::sim::wmma_enter(call);
  detail::check_pointer(call, p, ldm, c, layout == mem_row_major);
  detail::move(c, const_cast<T*>(p), ldm, layout == mem_row_major, false);
  nanoserve::sim::wmma_leave(call);
}

/// \brief Stores an accumulator tile in the given memory layout. Warp-collective.
template <int M, int N, int K, typename T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& c, unsigned ldm,
                       layout_t layout, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  const nanoserve::sim::WmmaCall call{"wmma::store_matrix_sync",
                                      detail::hash_args(p, ldm, layout), nullptr, {file, line}};
  nanoserve::sim::wmma_enter(call);
  detail::check_pointer(call, p, ldm, c, layout == mem_row_major);
  detail::move(const_cast<fragment<accumulator, M, N, K, T>&>(c), p, ldm, layout == mem_row_major,
               true);
  nanoserve::sim::wmma_leave(call);
}

/// \brief d = a·b + c on the warp's tensor core. Warp-collective; `d` may be `c`.
template <int M, int N, int K, typename TIn, typename LayoutA, typename LayoutB, typename TD,
          typename TC>
void mma_sync(fragment<accumulator, M, N, K, TD>& d,
              const fragment<matrix_a, M, N, K, TIn, LayoutA>& a,
              const fragment<matrix_b, M, N, K, TIn, LayoutB>& b,
              const fragment<accumulator, M, N, K, TC>& c, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  static_assert(std::is_same<TIn, __half>::value ||
                    (std::is_same<TD, float>::value && std::is_same<TC, float>::value),
                "wmma: __nv_bfloat16 multiplicands need float accumulators");
  using A = fragment<matrix_a, M, N, K, TIn, LayoutA>;
  using B = fragment<matrix_b, M, N, K, TIn, LayoutB>;
  using C = fragment<accumulator, M, N, K, TC>;
  using Lane = detail::MmaLane<A, B, C>;
  const Lane mine{&a, &b, &c};
  const nanoserve::sim::WmmaCall call{"wmma::mma_sync", 0, &mine, {file, line}};
  const void* const* lanes = nanoserve::sim::wmma_enter(call);
  // The first lane to get here computes the whole tile once for the warp (checking the
  // operands' replicated elements); every lane then picks its own elements of d, before anyone
  // writes (d may alias c in any lane).
  float* dense_d = nanoserve::sim::wmma_warp_scratch();
  if (nanoserve::sim::wmma_claim()) {
    float dense_a[M * K];
    float dense_b[K * N];
    detail::gather<A>(call, lanes, [](const void* l) { return static_cast<const Lane*>(l)->a; },
                      dense_a);
    detail::gather<B>(call, lanes, [](const void* l) { return static_cast<const Lane*>(l)->b; },
                      dense_b);
    detail::gather<C>(call, lanes, [](const void* l) { return static_cast<const Lane*>(l)->c; },
                      dense_d);
    for (int row = 0; row < M; ++row) {
      for (int col = 0; col < N; ++col) {
        float acc = dense_d[row * N + col];
        for (int k = 0; k < K; ++k) acc = fmaf(dense_a[row * K + k], dense_b[k * N + col], acc);
        dense_d[row * N + col] = acc;
      }
    }
  }
  constexpr int n = fragment<accumulator, M, N, K, TD>::num_elements;
  TD result[n];
  const nanoserve::sim::WmmaMapping mapping = nanoserve::sim::wmma_mapping();
  const int lane = nanoserve::sim::wmma_lane();
  for (int i = 0; i < n; ++i) {
    const int e = nanoserve::sim::wmma_element(lane * n + i, 32 * n, M * N, mapping);
    result[i] = nanoserve::sim::wmma_from_float<TD>(dense_d[e]);
  }
  nanoserve::sim::wmma_leave(call);
  for (int i = 0; i < n; ++i) d.x[i] = result[i];
}

}  // namespace wmma
}  // namespace nvcuda
