#pragma once
/// \file
/// \brief Packing integer codes into bytes: INT8 one code per byte, INT4 two codes per byte.
///
/// Each row of a (rows, cols) code matrix starts on a byte boundary, so a row occupies
/// `packed_row_bytes(cols, bits)` bytes and row `r` begins at byte `r * packed_row_bytes`.
/// INT4 puts element `2k` in the **low** nibble and element `2k+1` in the **high** nibble of
/// byte `k` (the order of GPTQ's int32 packing, byte by byte, on a little-endian machine);
/// an odd last element leaves the high nibble of the row's last byte zero:
///
///     codes of one row    c0   c1   c2   c3   c4   …   c(n-1)
///                          │    │    │    │    │
///     byte k = 0, 1, 2 … ┌─┴────┴─┐┌─┴────┴─┐┌─┴─ …
///     bit                 7654 3210 7654 3210
///                         ─c1─ ─c0─ ─c3─ ─c2─  …
///
///     c(2k)   = byte[k] & 0x0F
///     c(2k+1) = byte[k] >> 4
///
/// (GGUF's Q4_0 is different: inside a 32-element block, byte j holds elements j and j+16 —
/// see common/loaders/gguf_quant_blocks.h.)

#include <cstdint>
#include <vector>

namespace nanoserve::quant {

/// \brief Bytes per packed row: `cols` for INT8, `ceil(cols / 2)` for INT4.
int64_t packed_row_bytes(int cols, int bits);

/// \brief Packs codes (rows, cols), each in [0, 2^bits − 1], into
/// (rows, packed_row_bytes(cols, bits)) bytes. Throws `InvalidArgument` for bits not 4 or 8,
/// a wrong `codes` size, or a code out of range.
std::vector<uint8_t> pack_codes(const std::vector<uint8_t>& codes, int rows, int cols, int bits);

/// \brief The code of element (`row`, `col`) in packed data with `row_bytes` bytes per row.
inline int unpack_code(const uint8_t* packed, int64_t row_bytes, int bits, int row, int col) {
  const uint8_t* r = packed + int64_t(row) * row_bytes;
  if (bits == 8) return r[col];
  const uint8_t byte = r[col >> 1];
  return (col & 1) ? (byte >> 4) : (byte & 0x0F);
}

/// \brief The inverse of `pack_codes`: codes (rows, cols). Throws `InvalidArgument` when
/// `packed` does not hold exactly rows × packed_row_bytes bytes.
std::vector<uint8_t> unpack_codes(const std::vector<uint8_t>& packed, int rows, int cols, int bits);

}  // namespace nanoserve::quant
