#pragma once
/// \file
/// \brief The rest of ggml's block formats llama.cpp writes for the models of issue 14:
/// Q4_1, Q5_0, Q5_1 (32-element blocks) and the K-quants Q2_K, Q3_K, Q5_K, Q6_K
/// (256-element super-blocks), decoded to fp32 with the arithmetic of ggml's
/// `dequantize_row_*` (ggml-quants.c) in the same order, so the values equal ggml's bit for bit
/// (checked against llama.cpp's own `to_float`: tests/common/test_gguf_ggml_reference.cpp).
///
///     Q4_1  32 el, 20 B:  fp16 d | fp16 m | qs[16]          x = d·q + m   (q: nibble)
///     Q5_0  32 el, 22 B:  fp16 d | qh[4] | qs[16]           x = d·(q − 16) (q: nibble | bit<<4)
///     Q5_1  32 el, 24 B:  fp16 d | fp16 m | qh[4] | qs[16]  x = d·q + m
///           element j (< 16) is the low nibble of qs[j], element j + 16 the high one; the 5th
///           bit of element e is bit e of the little-endian uint32 qh.
///
///     Q2_K  256 el, 84 B:  scales[16] | qs[64] | fp16 d | fp16 dmin
///           16 sub-blocks of 16; scales[s]: low nibble scale, high nibble min;
///           x = d·sc·q − dmin·m with q the 2-bit field (shift 0, 2, 4, 6 of a byte)
///     Q3_K  256 el, 110 B: hmask[32] | qs[64] | scales[12] | fp16 d
///           16 six-bit scales (packed: 4 low bits in scales[0..7], 2 high bits in [8..11]);
///           x = d·(s − 32)·(q2 − (hmask bit set ? 0 : 4))
///     Q5_K  256 el, 176 B: fp16 d | fp16 dmin | scales[12] | qh[32] | qs[128]
///           Q4_K's layout plus a fifth bit per element from qh
///     Q6_K  256 el, 210 B: ql[128] | qh[64] | int8 scales[16] | fp16 d
///           x = d·scale·(q6 − 32), q6 = 4 low bits from ql, 2 high bits from qh
///
/// In every K-quant the elements of a 128-element half are interleaved across bytes exactly as
/// the loops of `dequantize_row_*` walk them; the .cpp follows those loops.

#include <cstdint>

namespace nanoserve {

/// \brief Decodes `n` (a multiple of 32) Q4_1 elements.
void decode_q4_1(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 32) Q5_0 elements.
void decode_q5_0(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 32) Q5_1 elements.
void decode_q5_1(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 256) Q2_K elements.
void decode_q2_k(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 256) Q3_K elements.
void decode_q3_k(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 256) Q5_K elements.
void decode_q5_k(const uint8_t* src, uint64_t n, float* dst);
/// \brief Decodes `n` (a multiple of 256) Q6_K elements.
void decode_q6_k(const uint8_t* src, uint64_t n, float* dst);

}  // namespace nanoserve
