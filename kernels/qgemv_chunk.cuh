#pragma once
/// \file
/// \brief The chunk loader of the fast path of quantized GEMV v03–v06, `QuantChunks`: 16-byte
/// chunks of packed codes, one scale and zero point per chunk, dequantized in registers, for
/// the GEMV chunk loop every member of the family runs (`gemv_chunk_kernel`, kernels/gemv.cuh).
/// The versions differ only in the loader's template arguments — how a 32-bit word of codes
/// becomes floats (`ConvertDequant`, `ExponentDequant`, `DeferredScaleDequant`) — and in how
/// many rows a warp computes, so each version's idea is exactly the code that differs.
///
/// ```
///   one row of W (INT4):  | chunk 0 | chunk 1 | … | chunk 31 | chunk 32 | …     chunk = 16 bytes
///                            lane 0    lane 1       lane 31    lane 0             = 32 codes
///   a chunk = 4 words:    | word 0 | word 1 | word 2 | word 3 |                  word = 8 codes
///   a word (INT4):        bits 31..28 27..24 … 7..4 3..0  =  codes c7 c6 … c1 c0 (c0 = column 0)
/// ```
/// A warp-wide load reads 512 contiguous bytes of a row (1024 INT4 weights); a chunk never
/// straddles two groups (the group size is a multiple of a chunk), so each lane fetches one
/// scale and one zero point per chunk instead of one per weight.

#include <cstdint>
#include <type_traits>

#include "kernels/gemv.cuh"
#include "kernels/qlinear_common.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve::qgemv_detail {

/// \brief Codes in one 16-byte chunk: 32 INT4 or 16 INT8.
template <int kBits>
constexpr int kChunkValues = 128 / kBits;
/// \brief Codes in one 32-bit word: 8 INT4 or 4 INT8.
template <int kBits>
constexpr int kWordValues = 32 / kBits;

/// \brief Whether the chunk path applies: no act-order, whole 16-byte chunks per row (cols a
/// multiple of 32 for INT4, 16 for INT8 — which also keeps every row of x 16-byte aligned),
/// groups made of whole chunks, and 16-byte aligned codes and inputs.
inline bool chunk_path_applies(const QuantizedWeightView& w, const void* x) {
  const int values = 128 / w.bits;
  return w.g_idx == nullptr && w.cols % values == 0 && w.group_size % values == 0 &&
         aligned16(w.qweight) && aligned16(x);
}

/// \brief Word `k` (0..3) of a chunk; word 0 holds the chunk's first codes (little-endian).
__device__ __forceinline__ unsigned chunk_word(const uint4& raw, int k) {
  return k == 0 ? raw.x : k == 1 ? raw.y : k == 2 ? raw.z : raw.w;
}

/// \brief v03's dequantization: shift and mask each code out of the word, convert it to float
/// (an I2F instruction), subtract the zero point, scale.
///
/// The conversion is the catch: the CUDA programming guide's throughput table gives type
/// conversions 16 results per clock per SM on compute capability 8.x and 9.0, against 64–128
/// fp32 multiply-adds, so at batch 1 — one FMA per weight — the I2F alone can take longer than
/// streaming the INT4 weights (an estimate from the table, not yet a measurement).
template <int kBits>
struct ConvertDequant {
  /// \brief `word` returns scaled weights: the kernel multiplies and adds them directly.
  static constexpr bool kDeferScale = false;
  /// \brief What one chunk's dequantization needs.
  struct Params {
    float scale;  ///< s
    float zero;   ///< z
  };
  /// \brief Params of a group with scale `s` and zero point `z`.
  __device__ __forceinline__ static Params params(float s, float z) { return {s, z}; }
  /// \brief out[i] = s · (code i of `word` − z), exact in fp32.
  __device__ __forceinline__ static void word(unsigned word, const Params& p,
                                              float (&out)[kWordValues<kBits>]) {
    constexpr unsigned kMask = (1u << kBits) - 1u;
    NS_UNROLL
    for (int i = 0; i < kWordValues<kBits>; ++i) {
      const float q = static_cast<float>((word >> (kBits * i)) & kMask);
      out[i] = p.scale * (q - p.zero);
    }
  }
};

/// \brief v04's dequantization: the exponent trick (as in FasterTransformer's and Marlin's INT4
/// kernels; Kim et al. 2022, "Who says elephants can't run"), in fp32.
///
/// The float with bit pattern `0x4B000000 | m` is exactly 2^23 + m for any m < 2^23 (2^23's
/// mantissa has one unit per integer), so a code becomes a float with one AND+OR (a single
/// LOP3) and one FADD — no conversion instruction. Codes are not shifted down first: a code at
/// bit position p of a 16-bit half-word is read as 2^23 + q·2^p, and the power of two is
/// folded into that position's constants:
/// ```
///   m_j  = float(0x4B000000 | (half & (mask << j·bits)))   = 2^23 + q·2^(j·bits)
///   w    = (m_j − bias_j) · scale_j,   bias_j = 2^23 + z·2^(j·bits),   scale_j = s·2^-(j·bits)
/// ```
/// Every step is exact: bias_j is an integer below 2^24, the difference (q − z)·2^(j·bits) is
/// an integer, and scale_j is s times a power of two; the product is the exact s · (q − z).
/// The upper half-word needs one shift per word (mantissa bit 23 is taken), so a code costs
/// 1 + 1/4 integer instructions (INT4) instead of shift, AND and I2F.
template <int kBits>
struct ExponentDequant {
  /// \brief `word` returns scaled weights: the kernel multiplies and adds them directly.
  static constexpr bool kDeferScale = false;
  /// \brief Code positions per 16-bit half-word: 4 (INT4) or 2 (INT8).
  static constexpr int kPositions = 16 / kBits;
  /// \brief The per-position constants of one chunk's group.
  struct Params {
    float scale[kPositions];  ///< s · 2^-(j·bits)
    float bias[kPositions];   ///< 2^23 + z · 2^(j·bits)
  };
  /// \brief Params of a group with scale `s` and zero point `z`.
  __device__ __forceinline__ static Params params(float s, float z) {
    Params p;
    NS_UNROLL
    for (int j = 0; j < kPositions; ++j) {
      const float place = static_cast<float>(1u << (kBits * j));  // 2^(j·bits)
      p.scale[j] = s * (1.0f / place);
      p.bias[j] = 8388608.0f + z * place;  // 2^23 + z·2^(j·bits)
    }
    return p;
  }
  /// \brief out[i] = s · (code i of `word` − z), exact in fp32.
  __device__ __forceinline__ static void word(unsigned word, const Params& p,
                                              float (&out)[kWordValues<kBits>]) {
    constexpr unsigned kMask = (1u << kBits) - 1u;
    const unsigned halves[2] = {word, word >> 16};  // codes 0..kPositions-1, then the rest
    NS_UNROLL
    for (int h = 0; h < 2; ++h) {
      NS_UNROLL
      for (int j = 0; j < kPositions; ++j) {
        const float m = __uint_as_float((halves[h] & (kMask << (kBits * j))) | 0x4B000000u);
        out[h * kPositions + j] = (m - p.bias[j]) * p.scale[j];
      }
    }
  }
};

/// \brief v06's dequantization at batch 1: the exponent trick without the scale.
///
/// At batch 1 every weight costs, in v05, a LOP3, an FADD, an FMUL (the scale) and the FFMA
/// with x — four instructions for two bytes of HBM traffic per four weights, which at an
/// H200's bandwidth keeps the warp schedulers as busy as the memory. The scale is the same for
/// the whole chunk, so it can wait: `word` returns the unscaled, position-weighted
/// `(q − z)·2^(j·bits)`, the kernel sums products per position j, and multiplies each of the
/// kPositions sums by scale_j once per chunk — three instructions per weight. (At batch > 1 the
/// FMUL is shared by the batch's FMAs anyway and the per-position sums would cost kPositions
/// registers per vector, so v06 keeps v05's policy there.)
template <int kBits>
struct DeferredScaleDequant : ExponentDequant<kBits> {
  /// \brief `word` returns unscaled values; the kernel applies `Params::scale` per position.
  static constexpr bool kDeferScale = true;
  /// \brief The per-position constants (ExponentDequant's).
  using Params = typename ExponentDequant<kBits>::Params;
  /// \brief out[i] = (code i − z) · 2^(bits · (i mod kPositions)), exact in fp32.
  __device__ __forceinline__ static void word(unsigned word, const Params& p,
                                              float (&out)[kWordValues<kBits>]) {
    constexpr int kPositions = ExponentDequant<kBits>::kPositions;
    constexpr unsigned kMask = (1u << kBits) - 1u;
    const unsigned halves[2] = {word, word >> 16};
    NS_UNROLL
    for (int h = 0; h < 2; ++h) {
      NS_UNROLL
      for (int j = 0; j < kPositions; ++j) {
        const float m = __uint_as_float((halves[h] & (kMask << (kBits * j))) | 0x4B000000u);
        out[h * kPositions + j] = m - p.bias[j];
      }
    }
  }
};

/// \brief The chunk loader of quantized GEMV v03–v06 (see kernels/gemv.cuh): a chunk is 16
/// bytes of kBits-bit codes of one row, with its group's scale and zero point; `Dequant<kBits>`
/// turns each 32-bit word into floats, and with `kDeferAtBatch1` the batch-1 tier uses
/// DeferredScaleDequant instead (v06). Requires chunk_path_applies() (the launcher's job).
template <int kBits, template <int> class Dequant, bool kDeferAtBatch1 = false>
struct QuantChunks : QuantizedWeightView {
  int chunks_per_group = 1;  ///< group_size / kChunkValues<kBits>, computed on the host

  /// \brief Chunks per row.
  __device__ __forceinline__ int chunks() const { return row_bytes() / 16; }

  /// \brief acc[r][b] += W[row_of[r], chunk columns] · x_b[chunk columns] for the kCount chunks
  /// `c, c + 32, …` of this lane: all kCount × kRows loads are issued before the first is
  /// used, so that many independent requests per lane are in flight at once (bandwidth = bytes
  /// in flight / latency).
  template <int kBatch, int kRows, int kCount, typename X>
  __device__ __forceinline__ void accumulate(const int (&row_of)[kRows],
                                             const X* __restrict__ x, int batch, int c,
                                             float (&acc)[kRows][kBatch]) const {
    using D = std::conditional_t<kDeferAtBatch1 && kBatch == 1, DeferredScaleDequant<kBits>,
                                 Dequant<kBits>>;
    constexpr int kWarp = gemv_detail::kWarp;
    constexpr int kValues = kChunkValues<kBits>;
    constexpr int kWord = kWordValues<kBits>;
    const std::int64_t bytes = row_bytes();
    uint4 raw[kCount][kRows];
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) {
        raw[u][r] = load16_streaming(qweight + row_of[r] * bytes +
                                     static_cast<std::int64_t>(c + u * kWarp) * 16);
      }
    }
    const float symmetric_zero = static_cast<float>(1 << (kBits - 1));
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      const int chunk = c + u * kWarp;
      const int group = chunk / chunks_per_group;
      typename D::Params p[kRows];
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const std::int64_t i = static_cast<std::int64_t>(row_of[r]) * groups() + group;
        p[r] = D::params(to_float(scales[i]),
                         zeros != nullptr ? to_float(zeros[i]) : symmetric_zero);
      }
      const X* x_chunk = x + static_cast<std::int64_t>(chunk) * kValues;  // (kValues) of x_0
      // Deferred scale (v06): per-position sums of this chunk, scaled once at its end.
      constexpr int kParts = D::kDeferScale ? 16 / kBits : 1;
      float part[kRows][kBatch][kParts];
      if constexpr (D::kDeferScale) {
        NS_UNROLL
        for (int r = 0; r < kRows; ++r) {
          NS_UNROLL
          for (int b = 0; b < kBatch; ++b) {
            NS_UNROLL
            for (int j = 0; j < kParts; ++j) part[r][b][j] = 0.0f;
          }
        }
      }
      NS_UNROLL
      for (int k = 0; k < 4; ++k) {
        float wv[kRows][kWord];  // dequantized weights of word k, every row
        NS_UNROLL
        for (int r = 0; r < kRows; ++r) D::word(chunk_word(raw[u][r], k), p[r], wv[r]);
        NS_UNROLL
        for (int b = 0; b < kBatch; ++b) {
          if (b < batch) {  // uniform across the warp
            float xv[kWord];  // loaded once, used by every row of the warp
            load_as_floats<kWord>(x_chunk + static_cast<std::int64_t>(b) * cols + k * kWord, xv);
            NS_UNROLL
            for (int r = 0; r < kRows; ++r) {
              NS_UNROLL
              for (int i = 0; i < kWord; ++i) {
                if constexpr (D::kDeferScale) {
                  part[r][b][i % kParts] += wv[r][i] * xv[i];
                } else {
                  acc[r][b] += wv[r][i] * xv[i];
                }
              }
            }
          }
        }
      }
      if constexpr (D::kDeferScale) {
        NS_UNROLL
        for (int r = 0; r < kRows; ++r) {
          NS_UNROLL
          for (int b = 0; b < kBatch; ++b) {
            NS_UNROLL
            for (int j = 0; j < kParts; ++j) acc[r][b] += p[r].scale[j] * part[r][b][j];
          }
        }
      }
    }
  }
};

}  // namespace nanoserve::qgemv_detail
