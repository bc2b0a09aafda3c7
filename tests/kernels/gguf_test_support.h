#pragma once
/// \file
/// \brief Helpers of the GGUF kernel tests (test_gguf_linear*.cpp): random Q8_0 / Q4_0 / Q4_K /
/// Q6_K blocks, their host decoding by the project's loaders (common/loaders/gguf_quant_blocks.h,
/// gguf_more_blocks.h: ggml's dequantize_row_* exactly), a device copy with its view, and the
/// (activation, output) type pairs the launchers are instantiated for.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/loaders/gguf_more_blocks.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/sampling/rng.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/gguf_linear.h"

namespace nanoserve::testing {

/// \brief Every block type, in the order the tests sweep them.
inline const std::vector<GgufBlockType>& gguf_block_types() {
  static const std::vector<GgufBlockType> kTypes = {GgufBlockType::kQ8_0, GgufBlockType::kQ4_0,
                                                    GgufBlockType::kQ4_K, GgufBlockType::kQ6_K};
  return kTypes;
}

/// \brief "Q8_0", "Q4_0", "Q4_K" or "Q6_K".
inline std::string gguf_name(GgufBlockType type) {
  return type == GgufBlockType::kQ8_0   ? "Q8_0"
         : type == GgufBlockType::kQ4_0 ? "Q4_0"
         : type == GgufBlockType::kQ4_K ? "Q4_K"
                                        : "Q6_K";
}

/// \brief `rows` × `cols` weights of `type` with random contents, a pure function of `seed`: every
/// scale/min byte and code byte uniform (any such block is valid), the fp16 d (and Q4_K's dmin;
/// Q6_K's d is its last 2 bytes) finite, of either sign, |d| in [0.5, 1) · s with s chosen so that
/// weights are about U(−1, 1)/sqrt(cols) in size (linear_test_support's scaling: outputs O(1),
/// which the named tolerances assume). Small |d| are fp16 subnormals at cols ≥ 1024 (exact in
/// fp32).
inline std::vector<std::uint8_t> random_gguf_blocks(GgufBlockType type, int rows, int cols,
                                                    std::uint64_t seed) {
  const int block_elements = gguf_block_elements(type);
  const int block_bytes = gguf_block_bytes(type);
  const std::size_t blocks = std::size_t(rows) * std::size_t(cols / block_elements);
  std::vector<std::uint8_t> out(blocks * std::size_t(block_bytes));
  std::uint64_t counter = 0;
  const auto next = [&]() { return random_bits(seed, counter++, RngStream::kWeights)[0]; };
  // RMS of the decoded integer part: Q8_0 q ~ 74, Q4_0 (q − 8) ~ 4.6, Q4_K sc·q ~ 36·8.8,
  // Q6_K sc·(q − 32) ~ 74·18.5.
  const float inv_sqrt_cols = 1.0f / std::sqrt(float(cols));
  const float d_scale = type == GgufBlockType::kQ8_0   ? inv_sqrt_cols / 64.0f
                        : type == GgufBlockType::kQ4_0 ? inv_sqrt_cols / 4.0f
                        : type == GgufBlockType::kQ4_K ? inv_sqrt_cols / 320.0f
                                                       : inv_sqrt_cols / 1400.0f;
  const float dmin_scale = inv_sqrt_cols / 36.0f;  // Q4_K: dmin · m, m ~ 36
  const auto put_fp16 = [&](std::uint8_t* p, float scale) {
    const std::uint32_t bits = next();
    const float magnitude = (0.5f + 0.5f * uniform_float(bits)) * scale;
    const __half h = from_float<__half>((bits & 1u) ? -magnitude : magnitude);
    std::memcpy(p, &h, 2);
  };
  for (std::size_t b = 0; b < blocks; ++b) {
    std::uint8_t* block = out.data() + b * std::size_t(block_bytes);
    if (type == GgufBlockType::kQ6_K) {  // ql | qh | scales | d
      for (int i = 0; i < block_bytes - 2; ++i) block[i] = static_cast<std::uint8_t>(next() >> 24);
      put_fp16(block + block_bytes - 2, d_scale);
      continue;
    }
    put_fp16(block, d_scale);
    int first_random_byte = 2;
    if (type == GgufBlockType::kQ4_K) {
      put_fp16(block + 2, dmin_scale);
      first_random_byte = 4;
    }
    for (int i = first_random_byte; i < block_bytes; ++i) {
      block[i] = static_cast<std::uint8_t>(next() >> 24);
    }
  }
  return out;
}

/// \brief The `n` elements of `blocks` decoded on the host by the loaders' decoders.
inline std::vector<float> decode_gguf_on_host(GgufBlockType type,
                                              const std::vector<std::uint8_t>& blocks,
                                              std::size_t n) {
  std::vector<float> out(n);
  switch (type) {
    case GgufBlockType::kQ8_0: decode_q8_0(blocks.data(), n, out.data()); break;
    case GgufBlockType::kQ4_0: decode_q4_0(blocks.data(), n, out.data()); break;
    case GgufBlockType::kQ4_K: decode_q4_k(blocks.data(), n, out.data()); break;
    case GgufBlockType::kQ6_K: decode_q6_k(blocks.data(), n, out.data()); break;
  }
  return out;
}

/// \brief A random GGUF weight on the device and its host decoding.
struct GgufWeight {
  /// \brief Random blocks (random_gguf_blocks) of `type`, (rows, cols).
  GgufWeight(GgufBlockType type_, int rows_, int cols_, std::uint64_t seed)
      : type(type_), rows(rows_), cols(cols_) {
    host_blocks = random_gguf_blocks(type, rows, cols, seed);
    decoded = decode_gguf_on_host(type, host_blocks, std::size_t(rows) * std::size_t(cols));
    device_blocks = DeviceBuffer<std::uint8_t>(host_blocks);
  }
  /// \brief The device view.
  GgufWeightView view() const {
    GgufWeightView w;
    w.blocks = device_blocks.get();
    w.rows = rows;
    w.cols = cols;
    w.type = type;
    return w;
  }
  GgufBlockType type;                        ///< block format
  int rows;                                  ///< rows of W
  int cols;                                  ///< columns of W
  std::vector<std::uint8_t> host_blocks;     ///< the bytes
  std::vector<float> decoded;                ///< (rows, cols) ggml's fp32 values
  DeviceBuffer<std::uint8_t> device_blocks;  ///< device copy of host_blocks
};

/// \brief An (activation, output) type pair of the GGUF launchers.
template <typename A, typename O>
struct ActOut {
  using Act = A;  ///< activation type of X
  using Out = O;  ///< type of Y
};

/// \brief The three pairs the launchers are instantiated for (a GGUF linear writes its
/// activation type: the classifier, the one fp32-output linear, is always dense).
using GgufActOutTypes =
    ::testing::Types<ActOut<float, float>, ActOut<__half, __half>,
                     ActOut<__nv_bfloat16, __nv_bfloat16>>;

/// \brief Names an ActOut typed test "fp16_fp32" etc.
struct ActOutNames {
  /// \brief "<A>_<O>".
  template <typename P>
  static std::string GetName(int) {
    return std::string(dtype_name(dtype_of<typename P::Act>())) + "_" +
           dtype_name(dtype_of<typename P::Out>());
  }
};

}  // namespace nanoserve::testing
