#include "common/quant/packing.h"

#include <string>

#include "common/error.h"

namespace nanoserve::quant {

namespace {
void check_bits(int bits) {
  if (bits != 4 && bits != 8) {
    throw InvalidArgument("packing: bits " + std::to_string(bits) + " is not 4 or 8");
  }
}
}  // namespace

int64_t packed_row_bytes(int cols, int bits) {
  check_bits(bits);
  return bits == 8 ? int64_t(cols) : (int64_t(cols) + 1) / 2;
}

std::vector<uint8_t> pack_codes(const std::vector<uint8_t>& codes, int rows, int cols, int bits) {
  const int64_t row_bytes = packed_row_bytes(cols, bits);
  if (rows < 0 || cols < 0 || int64_t(codes.size()) != int64_t(rows) * cols) {
    throw InvalidArgument("pack_codes: " + std::to_string(codes.size()) + " codes for a (" +
                          std::to_string(rows) + ", " + std::to_string(cols) + ") matrix");
  }
  const int max_code = (1 << bits) - 1;
  std::vector<uint8_t> packed(size_t(rows * row_bytes), 0);  // (rows, row_bytes)
  for (int r = 0; r < rows; ++r) {
    const uint8_t* in = codes.data() + int64_t(r) * cols;  // (cols)
    uint8_t* out = packed.data() + r * row_bytes;          // (row_bytes)
    for (int c = 0; c < cols; ++c) {
      if (in[c] > max_code) {
        throw InvalidArgument("pack_codes: code " + std::to_string(in[c]) + " at (" +
                              std::to_string(r) + ", " + std::to_string(c) + ") exceeds " +
                              std::to_string(max_code) + " for " + std::to_string(bits) + " bits");
      }
      if (bits == 8) {
        out[c] = in[c];
      } else {
        out[c >> 1] |= uint8_t(in[c] << ((c & 1) * 4));  // even: low nibble, odd: high nibble
      }
    }
  }
  return packed;
}

std::vector<uint8_t> unpack_codes(const std::vector<uint8_t>& packed, int rows, int cols,
                                  int bits) {
  const int64_t row_bytes = packed_row_bytes(cols, bits);
  if (rows < 0 || cols < 0 || int64_t(packed.size()) != int64_t(rows) * row_bytes) {
    throw InvalidArgument("unpack_codes: " + std::to_string(packed.size()) + " bytes for a (" +
                          std::to_string(rows) + ", " + std::to_string(cols) + ") INT" +
                          std::to_string(bits) + " matrix, expected " +
                          std::to_string(int64_t(rows) * row_bytes));
  }
  std::vector<uint8_t> codes(size_t(int64_t(rows) * cols));  // (rows, cols)
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      codes[size_t(int64_t(r) * cols + c)] = uint8_t(unpack_code(packed.data(), row_bytes, bits, r, c));
    }
  }
  return codes;
}

}  // namespace nanoserve::quant
