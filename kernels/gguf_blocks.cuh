#pragma once
/// \file
/// \brief The device decoders of the GGUF block formats Q8_0, Q4_0, Q4_K and Q6_K
/// (kernels/gguf_linear.h) and the argument checks of their launchers. The GEMV
/// (kernels/gguf_gemv.cu) and the dequantize kernel (kernels/gguf_dequantize.cu) both decode
/// through the same four format policies, so the dequantize test's bitwise equality with the
/// host decoders (common/loaders/gguf_quant_blocks.h, gguf_more_blocks.h: ggml's
/// `dequantize_row_*`) covers the GEMV's weights too.
///
/// A format cuts a row of blocks into **chunks**, the unit one lane loads and decodes, and a
/// chunk into **pieces** of 8 consecutive columns (one 16-byte load of 16-bit x, two of fp32):
/// ```
///   Q8_0  chunk = ¼ block: d + qs[8k .. 8k+7]           1 piece:  cols 8k .. 8k+7
///   Q4_0  chunk = ½ block: d + qs[8h .. 8h+7]           2 pieces: low nibbles = cols 8h ..,
///                                                                 high nibbles = cols 16 + 8h ..
///   Q4_K  chunk = ¼ super-block (quarter k):            8 pieces: low nibbles of qs bytes
///         header (d, dmin, scales: 16 B) + qs[32k ..    8p .. (sub-block 2k, cols 8p ..), then
///         32k+31] = sub-blocks 2k and 2k+1                        high nibbles (2k+1, cols 32 + ..)
///   Q6_K  chunk = ¼ super-block (half h, t):            8 pieces: 4 groups of 16 columns
///         16-byte runs of ql (2), qh (1) + 4 scales     128h + 16t + 32g .., 2 pieces each
///         + d                                           (Q6_KFormat)
/// ```
/// Neighbouring chunks of a row are neighbouring bytes, so when the lanes of a warp take
/// neighbouring chunks each load instruction of the warp reads one contiguous stretch: 8 Q8_0
/// or 16 Q4_0 blocks (272 / 288 bytes), or 8 Q4_K super-blocks (1152 bytes). Splitting a
/// 34- or 18-byte block over several lanes keeps that stretch short: with one lane per block,
/// each 2-byte load instruction would touch 32 blocks (1088 bytes, 9 cache lines) for 64 useful
/// bytes. The lanes of one block load its d at the same address (one broadcast).
///
/// Each decoded weight is the exact fp32 value the host decoder computes: `d · q` (Q8_0) and
/// `d · (q − 8)` (Q4_0) are exact products; Q4_K's `d1 = d · sc`, `m1 = dmin · m` are exact
/// (11 × 6 significant bits) and so is `d1 · q` (17 × 4), so `d1 · q − m1` rounds once whether
/// or not the compiler fuses it into an FMA; Q6_K's `(d · sc) · (q − 32)` is exact too (18 × 5
/// bits: Q6_KFormat).
///
/// Blocks are read with 2-byte loads (Q8_0, Q4_0 and Q6_K blocks are 34, 18 and 210 bytes
/// long, so only 2-byte aligned) and with 16-byte loads for Q4_K (144 = 9 · 16).

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/gguf_linear.h"
#include "kernels/linear_common.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve {

/// \brief "Q8_0", "Q4_0", "Q4_K" or "Q6_K".
inline const char* gguf_block_type_name(GgufBlockType type) {
  return type == GgufBlockType::kQ8_0   ? "Q8_0"
         : type == GgufBlockType::kQ4_0 ? "Q4_0"
         : type == GgufBlockType::kQ4_K ? "Q4_K"
                                        : "Q6_K";
}

/// \brief The alignment the kernels need of `GgufWeightView::blocks`: 16 bytes for Q4_K
/// (16-byte loads), 2 for Q8_0 / Q4_0 / Q6_K (2-byte loads: their blocks are 34, 18 and 210
/// bytes). Every device allocation and GGUF's 32-byte tensor alignment satisfy both; rows stay
/// aligned because a row is whole blocks.
inline std::size_t gguf_blocks_alignment(GgufBlockType type) {
  return type == GgufBlockType::kQ4_K ? 16 : 2;
}

/// \brief Validates a GGUF weight view for `op`: a known block type, rows and cols >= 0, cols a
/// multiple of the block's elements, and — when `reads` (something will be read) — non-null,
/// aligned blocks. Throws std::invalid_argument naming `op` and the field.
inline void check_gguf_view(const char* op, const GgufWeightView& w, bool reads) {
  const auto fail = [op](const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": " + what);
  };
  if (w.type != GgufBlockType::kQ8_0 && w.type != GgufBlockType::kQ4_0 &&
      w.type != GgufBlockType::kQ4_K && w.type != GgufBlockType::kQ6_K) {
    fail("type = " + std::to_string(static_cast<int>(w.type)) +
         " is not Q8_0, Q4_0, Q4_K or Q6_K");
  }
  if (w.rows < 0) fail("rows = " + std::to_string(w.rows) + " must be >= 0");
  if (w.cols < 0) fail("cols = " + std::to_string(w.cols) + " must be >= 0");
  const int block = gguf_block_elements(w.type);
  if (w.cols % block != 0) {
    fail("cols = " + std::to_string(w.cols) + " is not a multiple of " +
         gguf_block_type_name(w.type) + "'s " + std::to_string(block) + "-element blocks");
  }
  if (!reads) return;
  if (w.blocks == nullptr) fail("blocks is null");
  const std::size_t align = gguf_blocks_alignment(w.type);
  if (reinterpret_cast<std::uintptr_t>(w.blocks) % align != 0) {
    fail(std::string("blocks is not ") + std::to_string(align) + "-byte aligned (" +
         gguf_block_type_name(w.type) + ")");
  }
}

/// \brief Validates a GGUF linear launch `Y = X Wᵀ` (X (batch, cols), Y (batch, out)): the view
/// (check_gguf_view), batch >= 0, the epilogue (an even row count under kSwiGLU), non-null x
/// and y aligned to their element sizes. Throws std::invalid_argument naming `op`.
/// \return true when there is nothing to launch (batch or rows 0)
inline bool check_gguf_linear_args(const char* op, const GgufWeightView& w, const void* x,
                                   const void* y, int batch, std::size_t x_align,
                                   std::size_t y_align, Epilogue epilogue) {
  const auto fail = [op](const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": " + what);
  };
  const auto misaligned = [](const void* p, std::size_t n) {
    return reinterpret_cast<std::uintptr_t>(p) % n != 0;
  };
  if (batch < 0) fail("batch = " + std::to_string(batch) + " must be >= 0");
  const bool empty = batch == 0 || w.rows == 0;
  check_gguf_view(op, w, !empty && w.cols > 0);
  check_epilogue(op, w.rows, epilogue, true);
  if (empty) return true;
  if (y == nullptr) fail("y is null");
  if (misaligned(y, y_align)) fail("y is not " + std::to_string(y_align) + "-byte aligned");
  if (w.cols == 0) return false;  // an empty sum: Y = 0, or Y unchanged when accumulating
  if (x == nullptr) fail("x is null");
  if (misaligned(x, x_align)) fail("x is not " + std::to_string(x_align) + "-byte aligned");
  return false;
}

namespace gguf_detail {

/// \brief Columns of a piece: what one 16-byte load of fp16/bf16 x covers.
constexpr int kPiece = 8;

/// \brief The fp16 value with bit pattern `bits`, widened to fp32 (exact).
__device__ __forceinline__ float half_bits(unsigned bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits & 0xffffu)));
}

/// \brief Two bytes at a 2-byte aligned address.
__device__ __forceinline__ unsigned load_u16(const std::uint8_t* p) {
  return *reinterpret_cast<const unsigned short*>(p);
}

/// \brief Four bytes at a 2-byte aligned address (little-endian), as two 2-byte loads.
__device__ __forceinline__ unsigned load_u32_2aligned(const std::uint8_t* p) {
  return load_u16(p) | (load_u16(p + 2) << 16);
}

/// \brief Word `k` (0..3) of a 16-byte vector (word 0 holds its first bytes).
__device__ __forceinline__ unsigned word_of(const uint4& v, int k) {
  return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

/// \brief Byte `n` (0..15) of a 16-byte vector.
__device__ __forceinline__ int byte_of(const uint4& v, int n) {
  return static_cast<int>((word_of(v, n >> 2) >> (8 * (n & 3))) & 0xffu);
}

/// \brief Q8_0: 32 elements in 34 bytes, `fp16 d | int8 q[32]`, x[j] = d · q[j]. A chunk is a
/// quarter block: 8 codes (one piece, columns 8k..8k+7 of block c / 4, k = c mod 4) and d.
struct Q8_0Format {
  static constexpr int kChunkValues = 8;  ///< weights per chunk
  static constexpr int kPieces = 1;       ///< pieces per chunk
  static constexpr int kUnroll = 8;       ///< chunks in flight per lane (8 · 10 bytes)
  /// \brief A quarter block in registers.
  struct Raw {
    unsigned d;     ///< fp16 bits of d
    unsigned q[2];  ///< 8 codes, 4 per word, the first in the low byte of q[0]
  };
  /// \brief The decoded scale.
  struct Params {
    float d;  ///< d in fp32
  };
  /// \brief First column of `chunk` in its row.
  __device__ __forceinline__ static int chunk_col(int chunk) {
    return (chunk >> 2) * 32 + (chunk & 3) * 8;
  }
  /// \brief First column of piece `piece` (always 0) relative to chunk_col.
  __device__ __forceinline__ static int piece_col(int piece) { return piece * kPiece; }
  /// \brief Loads quarter `chunk & 3` of block `chunk >> 2` of the row starting at `row`.
  __device__ __forceinline__ static Raw load(const std::uint8_t* row, int chunk) {
    const std::uint8_t* b = row + static_cast<std::int64_t>(chunk >> 2) * 34;
    const std::uint8_t* q = b + 2 + 8 * (chunk & 3);
    return {load_u16(b), {load_u32_2aligned(q), load_u32_2aligned(q + 4)}};
  }
  /// \brief The block's scale.
  __device__ __forceinline__ static Params params(const Raw& r, int /*chunk*/) {
    return {half_bits(r.d)};
  }
  /// \brief The 8 weights of the chunk (`piece` is 0).
  __device__ __forceinline__ static void piece(const Raw& r, const Params& p, int /*piece*/,
                                               float (&w)[kPiece]) {
    NS_UNROLL
    for (int j = 0; j < kPiece; ++j) {
      const int q = static_cast<signed char>((r.q[j / 4] >> (8 * (j % 4))) & 0xffu);
      w[j] = static_cast<float>(q) * p.d;
    }
  }
};

/// \brief Q4_0: 32 elements in 18 bytes, `fp16 d | qs[16]`; byte j holds element j (low
/// nibble) and j + 16 (high nibble); x = d · (nibble − 8). A chunk is half a block: bytes
/// 8h..8h+7 (h = c mod 2) and d, i.e. columns 8h.. (low nibbles, piece 0) and 16 + 8h.. (high
/// nibbles, piece 1).
struct Q4_0Format {
  static constexpr int kChunkValues = 16;  ///< weights per chunk
  static constexpr int kPieces = 2;        ///< pieces per chunk
  static constexpr int kUnroll = 8;        ///< chunks in flight per lane (8 · 10 bytes)
  /// \brief Half a block in registers.
  struct Raw {
    unsigned d;     ///< fp16 bits of d
    unsigned q[2];  ///< qs[8h .. 8h+7], the first byte in the low byte of q[0]
  };
  /// \brief The decoded scale.
  struct Params {
    float d;  ///< d in fp32
  };
  /// \brief First column of `chunk` (of its low nibbles) in its row.
  __device__ __forceinline__ static int chunk_col(int chunk) {
    return (chunk >> 1) * 32 + (chunk & 1) * 8;
  }
  /// \brief First column of piece `piece` relative to chunk_col: the high nibbles are 16 on.
  __device__ __forceinline__ static int piece_col(int piece) { return piece * 16; }
  /// \brief Loads half `chunk & 1` of block `chunk >> 1` of the row starting at `row`.
  __device__ __forceinline__ static Raw load(const std::uint8_t* row, int chunk) {
    const std::uint8_t* b = row + static_cast<std::int64_t>(chunk >> 1) * 18;
    const std::uint8_t* q = b + 2 + 8 * (chunk & 1);
    return {load_u16(b), {load_u32_2aligned(q), load_u32_2aligned(q + 4)}};
  }
  /// \brief The block's scale.
  __device__ __forceinline__ static Params params(const Raw& r, int /*chunk*/) {
    return {half_bits(r.d)};
  }
  /// \brief The weights of piece `piece`: the low (0) or high (1) nibbles of the 8 bytes.
  __device__ __forceinline__ static void piece(const Raw& r, const Params& p, int piece,
                                               float (&w)[kPiece]) {
    const int shift = piece == 1 ? 4 : 0;
    NS_UNROLL
    for (int j = 0; j < kPiece; ++j) {
      const int q = static_cast<int>((r.q[j / 4] >> (8 * (j % 4) + shift)) & 0xfu) - 8;
      w[j] = static_cast<float>(q) * p.d;
    }
  }
};

/// \brief Q4_K: 256 elements in 144 bytes, `fp16 d | fp16 dmin | scales[12] | qs[128]`, 8
/// sub-blocks of 32 with 6-bit scales and mins; a chunk is quarter k of a super-block:
/// sub-blocks 2k (low nibbles of qs[32k..32k+31]) and 2k+1 (high nibbles).
struct Q4_KFormat {
  static constexpr int kChunkValues = 64;  ///< weights per chunk (a quarter super-block)
  static constexpr int kPieces = 8;        ///< pieces per chunk
  static constexpr int kUnroll = 2;        ///< chunks in flight per lane (2 · 48 bytes)
  /// \brief A quarter super-block in registers.
  struct Raw {
    uint4 head;  ///< d, dmin, scales[12]
    uint4 q[2];  ///< qs[32k .. 32k+31]
  };
  /// \brief The two sub-blocks' scales and mins.
  struct Params {
    float d1;  ///< d · sc of sub-block 2k
    float m1;  ///< dmin · m of sub-block 2k
    float d2;  ///< d · sc of sub-block 2k+1
    float m2;  ///< dmin · m of sub-block 2k+1
  };
  /// \brief First column of `chunk` in its row.
  __device__ __forceinline__ static int chunk_col(int chunk) {
    return (chunk >> 2) * 256 + (chunk & 3) * kChunkValues;
  }
  /// \brief First column of piece `piece` relative to chunk_col: 8p (low nibbles for p < 4,
  /// then the high nibbles 32 columns on).
  __device__ __forceinline__ static int piece_col(int piece) { return piece * kPiece; }
  /// \brief Loads quarter `chunk & 3` of super-block `chunk >> 2` of the row at `row`.
  __device__ __forceinline__ static Raw load(const std::uint8_t* row, int chunk) {
    const std::uint8_t* b = row + static_cast<std::int64_t>(chunk >> 2) * 144;
    Raw r;
    r.head = load16_streaming(b);
    r.q[0] = load16_streaming(b + 16 + 32 * (chunk & 3));
    r.q[1] = load16_streaming(b + 32 + 32 * (chunk & 3));
    return r;
  }
  /// \brief The 6-bit scale and min of sub-block `i` (0..7), as ggml's get_scale_min_k4.
  __device__ __forceinline__ static void scale_min(const uint4& head, int i, int& sc, int& m) {
    const auto s = [&head](int n) { return byte_of(head, 4 + n); };  // scales[n]
    if (i < 4) {
      sc = s(i) & 63;
      m = s(i + 4) & 63;
    } else {
      sc = (s(i + 4) & 0x0F) | ((s(i - 4) >> 6) << 4);
      m = (s(i + 4) >> 4) | ((s(i) >> 6) << 4);
    }
  }
  /// \brief d1, m1, d2, m2 of quarter `chunk & 3`.
  __device__ __forceinline__ static Params params(const Raw& r, int chunk) {
    const float d = half_bits(r.head.x);
    const float dmin = half_bits(r.head.x >> 16);
    const int k = chunk & 3;
    int sc = 0, m = 0;
    Params p;
    scale_min(r.head, 2 * k, sc, m);
    p.d1 = d * static_cast<float>(sc);
    p.m1 = dmin * static_cast<float>(m);
    scale_min(r.head, 2 * k + 1, sc, m);
    p.d2 = d * static_cast<float>(sc);
    p.m2 = dmin * static_cast<float>(m);
    return p;
  }
  /// \brief The weights of piece `piece`: columns 8p.. (p < 4, low nibbles of bytes 8p..) or
  /// 32 + 8(p − 4).. (high nibbles of bytes 8(p − 4)..) of the chunk.
  __device__ __forceinline__ static void piece(const Raw& r, const Params& p, int piece,
                                               float (&w)[kPiece]) {
    const bool high = piece >= 4;
    const int bytes = 8 * (piece & 3);  // first qs byte of the piece, within the chunk
    const float d = high ? p.d2 : p.d1;
    const float m = high ? p.m2 : p.m1;
    NS_UNROLL
    for (int j = 0; j < kPiece; ++j) {
      const int n = bytes + j;
      const unsigned byte = (word_of(r.q[n >> 4], (n >> 2) & 3) >> (8 * (n & 3))) & 0xffu;
      const unsigned q = high ? byte >> 4 : byte & 0x0Fu;
      w[j] = d * static_cast<float>(q) - m;
    }
  }
};

/// \brief Q6_K: 256 elements in 210 bytes, `ql[128] | qh[64] | int8 scales[16] | fp16 d`, two
/// halves of 128 (ql[64], qh[32], scales[8] each). In a half, byte l (< 32) of qh and bytes l,
/// l + 32 of ql hold elements l, l + 32, l + 64, l + 96 (ggml's dequantize_row_q6_K):
/// ```
///   element   l            l + 32        l + 64        l + 96
///   low 4     ql[l] & 15   ql[l+32] & 15 ql[l] >> 4    ql[l+32] >> 4
///   high 2    qh[l] bits 0-1   2-3           4-5           6-7
///   scale     sc[l/16]     sc[2 + l/16]  sc[4 + l/16]  sc[6 + l/16]
/// ```
/// x = d · sc · (q − 32). A chunk is quarter c mod 4 of a super-block: half h = (c >> 1) & 1,
/// l in 16t .. 16t + 15 (t = c & 1), i.e. the 16-byte runs ql[64h + 16t ..], ql[64h + 32 + 16t
/// ..], qh[32h + 16t ..], scales sc[8h + t + 2g] (g = 0..3) and d: 64 elements in four groups
/// of 16 columns (128h + 16t + 32g ..), each group one scale, two pieces. 4 lanes per
/// super-block, like Q4_K, so a 4096-wide row (16 super-blocks) keeps all 32 lanes busy.
///
/// Loads: 210 = 2 · 105, so every other super-block starts 2 bytes off a 4-byte boundary and
/// everything is read with 2-byte loads (load_u32_2aligned). The lanes of a super-block read its
/// d and scale bytes at the same addresses; the 16-byte runs are read by 8 loads each, and the
/// lines they touch are reused from L1 by the following loads (a v02 could read aligned words
/// and funnel-shift them: for a GPU run to justify).
///
/// Numerics: the host decoder computes `(d · sc) · (q − 32)` and so does piece(), in that
/// order. Both products are exact in fp32, so no rounding (and no contraction, as there is no
/// addition) can tell the orders apart: d is an fp16 (an 11-bit significand; its subnormals are
/// normal fp32), |sc| <= 128 — 7 bits, or 128, a power of two — so d · sc has at most 18
/// significant bits; |q − 32| <= 32 — 5 bits (<= 31) or 32, a power of two — so the product
/// has at most 18 + 5 = 23 <= 24 bits. The dequantize test checks it bitwise.
struct Q6_KFormat {
  static constexpr int kChunkValues = 64;  ///< weights per chunk (a quarter super-block)
  static constexpr int kPieces = 8;        ///< pieces per chunk
  static constexpr int kUnroll = 2;        ///< chunks in flight per lane (2 · 58 bytes)
  /// \brief A quarter super-block in registers.
  struct Raw {
    unsigned lo[4];  ///< ql[64h + 16t .. +15]: low nibbles of groups 0, high of group 2
    unsigned hi[4];  ///< ql[64h + 32 + 16t .. +15]: low nibbles of group 1, high of group 3
    unsigned qh[4];  ///< qh[32h + 16t .. +15]: bits 2g, 2g + 1 for group g
    unsigned sc[2];  ///< scales[8h .. 8h + 7]
    unsigned d;      ///< fp16 bits of d
  };
  /// \brief The four groups' d · sc.
  struct Params {
    float s[4];  ///< d · sc[8h + t + 2g] for group g
  };
  /// \brief First column of `chunk` in its row.
  __device__ __forceinline__ static int chunk_col(int chunk) {
    return (chunk >> 2) * 256 + ((chunk >> 1) & 1) * 128 + (chunk & 1) * 16;
  }
  /// \brief First column of piece `piece` relative to chunk_col: group p / 2 is 32 columns on,
  /// its second piece 8 more.
  __device__ __forceinline__ static int piece_col(int piece) {
    return (piece >> 1) * 32 + (piece & 1) * kPiece;
  }
  /// \brief 16 bytes at a 2-byte aligned address, as four words.
  __device__ __forceinline__ static void load16_2aligned(const std::uint8_t* p,
                                                          unsigned (&v)[4]) {
    NS_UNROLL
    for (int k = 0; k < 4; ++k) v[k] = load_u32_2aligned(p + 4 * k);
  }
  /// \brief Loads quarter `chunk & 3` of super-block `chunk >> 2` of the row at `row`.
  __device__ __forceinline__ static Raw load(const std::uint8_t* row, int chunk) {
    const std::uint8_t* b = row + static_cast<std::int64_t>(chunk >> 2) * 210;
    const int h = (chunk >> 1) & 1;
    const int t = chunk & 1;
    Raw r;
    load16_2aligned(b + 64 * h + 16 * t, r.lo);
    load16_2aligned(b + 64 * h + 32 + 16 * t, r.hi);
    load16_2aligned(b + 128 + 32 * h + 16 * t, r.qh);
    r.sc[0] = load_u32_2aligned(b + 192 + 8 * h);
    r.sc[1] = load_u32_2aligned(b + 196 + 8 * h);
    r.d = load_u16(b + 208);
    return r;
  }
  /// \brief d · sc of the four groups of quarter `chunk & 3`.
  __device__ __forceinline__ static Params params(const Raw& r, int chunk) {
    const float d = half_bits(r.d);
    const int t = chunk & 1;
    Params p;
    NS_UNROLL
    for (int g = 0; g < 4; ++g) {
      const int n = t + 2 * g;  // scales[8h + n]
      const int sc = static_cast<signed char>((r.sc[n >> 2] >> (8 * (n & 3))) & 0xffu);
      p.s[g] = d * static_cast<float>(sc);  // exact (see the struct comment)
    }
    return p;
  }
  /// \brief The weights of piece `piece`: group g = piece / 2, bytes 8 (piece & 1) .. + 7 of
  /// the chunk's runs.
  __device__ __forceinline__ static void piece(const Raw& r, const Params& p, int piece,
                                               float (&w)[kPiece]) {
    const int g = piece >> 1;
    const unsigned* ql = (g & 1) ? r.hi : r.lo;
    const int low_shift = g >= 2 ? 4 : 0;
    NS_UNROLL
    for (int j = 0; j < kPiece; ++j) {
      const int n = 8 * (piece & 1) + j;  // byte of the runs
      const unsigned low = (ql[n >> 2] >> (8 * (n & 3) + low_shift)) & 0xFu;
      const unsigned high = (r.qh[n >> 2] >> (8 * (n & 3) + 2 * g)) & 3u;
      const int q = static_cast<int>(low | (high << 4)) - 32;
      w[j] = p.s[g] * static_cast<float>(q);  // (d · sc) · (q − 32), the host's order; exact
    }
  }
};

/// \brief Calls `f(Format{})` with the format policy of `type`.
template <typename F>
void dispatch_format(GgufBlockType type, F&& f) {
  switch (type) {
    case GgufBlockType::kQ8_0: f(Q8_0Format{}); break;
    case GgufBlockType::kQ4_0: f(Q4_0Format{}); break;
    case GgufBlockType::kQ4_K: f(Q4_KFormat{}); break;
    case GgufBlockType::kQ6_K: f(Q6_KFormat{}); break;
  }
}

}  // namespace gguf_detail
}  // namespace nanoserve
