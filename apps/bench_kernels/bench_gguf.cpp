// GGUF weights kept packed on the device (kernels/gguf_linear.h), next to the quantized GEMV of
// chapter 5 (bench_qgemv.cpp): the GEMV that decodes Q8_0 / Q4_0 / Q4_K / Q6_K blocks in registers
// at Llama's 4096x4096 projection, batch 1 — decode streams W once, so time should follow the bytes
// per weight: 8.5 bits (Q8_0: 34 bytes per 32), 4.5 (Q4_0: 18 per 32; Q4_K: 144 per 256), 6.5625
// (Q6_K: 210 per 256) against fp16's 16 in `bench_kernels --kernel gemv`. Also the 8-row GEMV pass
// and the dequantize kernel of the prefill path (W decoded to fp16 once per prefill chunk). Bytes:
// the blocks once, plus x and y (fp32; dequantize: the fp16 matrix written).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/gguf_linear.h"

namespace nanoserve::bench {
namespace {

std::string type_name(GgufBlockType type) {
  return type == GgufBlockType::kQ8_0   ? "q8_0"
         : type == GgufBlockType::kQ4_0 ? "q4_0"
         : type == GgufBlockType::kQ4_K ? "q4_k"
                                        : "q6_k";
}

// rows x cols blocks of `type`: hashed bytes (timing does not depend on them) with finite
// fp16 scales (d, and Q4_K's dmin; Q6_K's d is its last two bytes) of about 0.01.
std::vector<std::uint8_t> blocks_for(GgufBlockType type, int rows, int cols) {
  const std::size_t block_bytes = std::size_t(gguf_block_bytes(type));
  const std::size_t count = std::size_t(rows) * std::size_t(cols / gguf_block_elements(type));
  std::vector<std::uint8_t> out(count * block_bytes);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
  }
  for (std::size_t b = 0; b < count; ++b) {
    const __half d = from_float<__half>(0.01f + 0.001f * float(b % 7));
    if (type == GgufBlockType::kQ6_K) {
      std::memcpy(&out[b * block_bytes + block_bytes - 2], &d, 2);
      continue;
    }
    std::memcpy(&out[b * block_bytes], &d, 2);
    if (type == GgufBlockType::kQ4_K) std::memcpy(&out[b * block_bytes + 2], &d, 2);
  }
  return out;
}

// The GGUF GEMV (launch_gguf_gemv, fp32 x and y) or, with `dequantize`, the fp16 dequantize.
BenchCase gguf_case(GgufBlockType type, int rows, int cols, int batch, bool dequantize) {
  GgufWeightView shape;
  shape.rows = rows;
  shape.cols = cols;
  shape.type = type;
  const double w_bytes = double(rows) * double(shape.row_bytes());
  BenchCase c;
  c.kernel = dequantize ? "gguf_dequantize" : "gguf_gemv";
  c.version = "v01";
  c.dtype = type_name(type);
  c.shape = std::to_string(rows) + "x" + std::to_string(cols) +
            (dequantize ? " to fp16" : " b" + std::to_string(batch));
  c.bytes = dequantize ? w_bytes + double(rows) * cols * 2.0
                       : w_bytes + double(batch) * (double(cols) + rows) * sizeof(float);
  c.flops = dequantize ? 0.0 : 2.0 * batch * double(rows) * cols;
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<std::uint8_t> blocks;
      DeviceBuffer<float> x;
      DeviceBuffer<float> y;
      DeviceBuffer<__half> dense;
    };
    auto b = std::make_shared<Buffers>();
    b->blocks = DeviceBuffer<std::uint8_t>(blocks_for(type, rows, cols));
    GgufWeightView w = shape;
    w.blocks = b->blocks.get();
    if (dequantize) {
      b->dense = DeviceBuffer<__half>(std::size_t(rows) * cols);
      return [=](cudaStream_t st) { launch_gguf_dequantize<__half>(w, b->dense.get(), st); };
    }
    b->x = DeviceBuffer<float>(pattern<float>(std::size_t(batch) * cols, 1));
    b->y = DeviceBuffer<float>(std::size_t(batch) * rows);
    return [=](cudaStream_t st) { launch_gguf_gemv<float>(w, b->x.get(), b->y.get(), batch, st); };
  };
  return c;
}

std::vector<BenchCase> gguf_cases(const SuiteOptions& options) {
  const int n = options.quick ? 256 : 4096;
  std::vector<BenchCase> cases;
  for (GgufBlockType type : {GgufBlockType::kQ8_0, GgufBlockType::kQ4_0, GgufBlockType::kQ4_K,
                             GgufBlockType::kQ6_K}) {
    cases.push_back(gguf_case(type, n, n, 1, false));
  }
  cases.push_back(gguf_case(GgufBlockType::kQ4_K, n, n, kGgufGemvMaxBatch, false));
  return cases;
}

std::vector<BenchCase> gguf_dequantize_cases(const SuiteOptions& options) {
  const int n = options.quick ? 256 : 4096;
  return {gguf_case(GgufBlockType::kQ4_K, n, n, 0, true)};
}

const bool kRegistered = register_suite("gguf_gemv", 26, gguf_cases);
const bool kRegisteredDequantize = register_suite("gguf_dequantize", 27, gguf_dequantize_cases);

}  // namespace
}  // namespace nanoserve::bench
