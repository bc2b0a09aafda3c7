#pragma once
/// \file
/// \brief ggml's quantized block formats Q8_0, Q4_0 and Q4_K: decoders to fp32 exactly as
/// ggml defines them (`dequantize_row_*` in ggml-quants.c), and encoders for Q8_0/Q4_0 that
/// follow ggml's reference quantizers (`quantize_row_*_ref`, what llama.cpp uses to create
/// files deterministically), for building test files.
///
/// A row of a GGUF tensor is cut into blocks of consecutive elements; each block is stored
/// self-contained (scale first), blocks back to back:
///
///     Q8_0  32 elements, 34 bytes:  fp16 d | int8 q[32]              x[j] = d · q[j]
///
///     Q4_0  32 elements, 18 bytes:  fp16 d | uint8 qs[16]            x[j] = d · (nibble − 8)
///           byte j holds TWO elements that are 16 apart — not neighbours:
///               low  nibble  qs[j] & 0x0F  →  element j        (j = 0..15)
///               high nibble  qs[j] >> 4    →  element j + 16
///
///     Q4_K  256 elements, 144 bytes (a "super-block" of 8 sub-blocks of 32):
///           fp16 d | fp16 dmin | uint8 scales[12] | uint8 qs[128]
///           sub-block i has a 6-bit scale sc_i and a 6-bit min m_i packed in `scales`:
///               i < 4:  sc = scales[i] & 63                 m = scales[i+4] & 63
///               i >= 4: sc = (scales[i+4] & 0x0F) | ((scales[i-4] >> 6) << 4)
///                       m  = (scales[i+4] >> 4)   | ((scales[i]   >> 6) << 4)
///           the 128 bytes are four chunks of 32; chunk k holds sub-blocks 2k (low nibbles)
///           and 2k+1 (high nibbles):
///               x[64k + l]      = d·sc_2k   · (qs[32k + l] & 0x0F) − dmin·m_2k
///               x[64k + 32 + l] = d·sc_2k+1 · (qs[32k + l] >> 4)   − dmin·m_2k+1
///
/// Q4_K's encoder fits each sub-block as x ≈ s·q − m with q ∈ 0..15 and m ≥ 0 (ggml's
/// `make_qkx2_quants`: least squares weighted by |x| + the sub-block's RMS, over 21 slightly
/// stretched grids), then stores s and m as 6-bit multiples of the super-block's d and dmin and
/// requantizes against the stored values.
///
/// The GGUF parser rejects a tensor whose rows are not a whole number of blocks, so decoders
/// always receive whole blocks.

#include <cstdint>
#include <vector>

namespace nanoserve {

/// \brief Elements per Q8_0 / Q4_0 block.
inline constexpr int kGgmlBlock32 = 32;
/// \brief Elements per K-quant super-block.
inline constexpr int kGgmlBlockK = 256;

/// \brief Decodes `n` (a multiple of 32) Q8_0 elements.
void decode_q8_0(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 32) Q4_0 elements.
void decode_q4_0(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 256) Q4_K elements.
void decode_q4_k(const uint8_t* src, uint64_t n, float* dst);

/// \brief Q8_0 blocks of `values` (size a multiple of 32, else `InvalidArgument`), as ggml's
/// reference: d = max|x| / 127, q = roundf(x / d) (half away from zero).
std::vector<uint8_t> encode_q8_0(const std::vector<float>& values);
/// \brief Q4_0 blocks of `values` (size a multiple of 32), as ggml's reference: d = m / −8
/// with m the element of largest magnitude (sign kept), q = min(15, trunc(x / d + 8.5)).
std::vector<uint8_t> encode_q4_0(const std::vector<float>& values);
/// \brief Q5_0 blocks of `values` (size a multiple of 32), as ggml's reference: Q4_0's rule
/// with d = m / −16 and 5-bit codes min(31, trunc(x / d + 16.5)).
std::vector<uint8_t> encode_q5_0(const std::vector<float>& values);
/// \brief Q4_K super-blocks of `values` (size a multiple of 256, else `InvalidArgument`), as
/// ggml's reference `quantize_row_q4_K_ref` (see the file comment).
std::vector<uint8_t> encode_q4_k(const std::vector<float>& values);

}  // namespace nanoserve
