// Weight-only quantized linear kernels (chapter 5) next to the fp16 GEMV of the same shape:
// issue 9's target is "W4A16 GEMV (group 128), batch 1: >= 3x faster than the fp16 GEMV" —
// decode reads every weight once, so INT4 codes (a quarter of the fp16 bytes, plus one fp16
// scale per 128 weights) should approach 4x when both kernels stream at full bandwidth.
//   qgemv v01..v06   the GEMV steps of kernels/qgemv.h, symmetric INT4 g128 and INT8 per-channel
//   qgemm v01..v03   the GEMM steps of kernels/qgemm.h at 64 rows; v03 (launch_qgemm's) at 512
// Bytes: the packed codes, scales and zero points once, plus x and y (fp32).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/qgemm.h"
#include "kernels/qgemv.h"

namespace nanoserve::bench {
namespace {

struct QShape {
  int rows;
  int cols;
  int bits;
  int group;  // columns per group (cols = per channel)
  bool asym;
};

std::string qshape_name(const QShape& s, int batch) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + " b" + std::to_string(batch) +
         " int" + std::to_string(s.bits) +
         (s.group == s.cols ? " per-ch" : " g" + std::to_string(s.group)) +
         (s.asym ? " asym" : "");
}

// Version `version` of the quantized GEMV (`gemm` false) or GEMM (`gemm` true).
BenchCase quant_case(bool gemm, int version, const QShape& s, int batch) {
  QuantizedWeightView shape_view;
  shape_view.rows = s.rows;
  shape_view.cols = s.cols;
  shape_view.bits = s.bits;
  shape_view.group_size = s.group;
  const std::size_t code_bytes = std::size_t(s.rows) * shape_view.row_bytes();
  const std::size_t group_count = std::size_t(s.rows) * shape_view.groups();
  BenchCase c;
  c.kernel = gemm ? "qgemm" : "qgemv";
  c.version = "v0" + std::to_string(version);
  c.dtype = "int" + std::to_string(s.bits);
  c.shape = qshape_name(s, batch);
  c.bytes = double(code_bytes) + double(group_count) * 2.0 * (s.asym ? 2 : 1) +
            double(batch) * (double(s.cols) + s.rows) * sizeof(float);
  c.flops = 2.0 * batch * double(s.rows) * s.cols;
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<std::uint8_t> qweight;
      DeviceBuffer<__half> scales;
      DeviceBuffer<__half> zeros;
      DeviceBuffer<float> x;
      DeviceBuffer<float> y;
    };
    auto b = std::make_shared<Buffers>();
    std::vector<std::uint8_t> codes(code_bytes);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      codes[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
    }
    std::vector<__half> scales(group_count), zeros(group_count);
    for (std::size_t i = 0; i < group_count; ++i) {
      scales[i] = from_float<__half>(0.01f + 0.001f * float(i % 7));  // s > 0
      zeros[i] = from_float<__half>(float((1 << (s.bits - 1)) + int(i % 3) - 1));
    }
    b->qweight = DeviceBuffer<std::uint8_t>(codes);
    b->scales = DeviceBuffer<__half>(scales);
    if (s.asym) b->zeros = DeviceBuffer<__half>(zeros);
    b->x = DeviceBuffer<float>(pattern<float>(std::size_t(batch) * s.cols, 1));
    b->y = DeviceBuffer<float>(std::size_t(batch) * s.rows);
    QuantizedWeightView w = shape_view;
    w.qweight = b->qweight.get();
    w.scales = b->scales.get();
    w.zeros = s.asym ? b->zeros.get() : nullptr;
    return [=](cudaStream_t st) {
      if (gemm) {
        launch_qgemm_version(version, w, b->x.get(), b->y.get(), batch, st);
      } else {
        launch_qgemv_version(version, w, b->x.get(), b->y.get(), batch, st);
      }
    };
  };
  return c;
}

std::vector<BenchCase> qgemv_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  if (options.quick) {
    for (int v = 1; v <= kQGemvVersions; ++v) {
      cases.push_back(quant_case(false, v, {256, 256, 4, 128, false}, 1));
      cases.push_back(quant_case(false, v, {256, 256, 8, 256, true}, 1));
    }
    return cases;
  }
  // The fp16 GEMV suite's shapes: Llama-2-7B 4096x4096 and 11008x4096, Llama-3-8B 14336x4096.
  for (int rows : {4096, 11008, 14336}) {
    for (int v = 1; v <= kQGemvVersions; ++v) {
      cases.push_back(quant_case(false, v, {rows, 4096, 4, 128, false}, 1));
    }
  }
  for (int v = 1; v <= kQGemvVersions; ++v) {
    cases.push_back(quant_case(false, v, {4096, 4096, 8, 4096, false}, 1));  // INT8 per channel
    cases.push_back(quant_case(false, v, {4096, 4096, 4, 128, true}, 1));    // asymmetric INT4
  }
  for (int batch : {4, 16}) {
    cases.push_back(quant_case(false, kQGemvVersions, {4096, 4096, 4, 128, false}, batch));
  }
  return cases;
}

std::vector<BenchCase> qgemm_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  const QShape shape = options.quick ? QShape{256, 256, 4, 128, false}
                                     : QShape{4096, 4096, 4, 128, false};
  for (int v = 1; v <= kQGemmVersions; ++v) {
    cases.push_back(quant_case(true, v, shape, options.quick ? 8 : 64));
  }
  if (!options.quick) cases.push_back(quant_case(true, kQGemmVersions, shape, 512));
  return cases;
}

const bool kRegistered = register_suite("qgemv", 25, qgemv_cases);
const bool kRegisteredGemm = register_suite("qgemm", 35, qgemm_cases);

}  // namespace
}  // namespace nanoserve::bench
