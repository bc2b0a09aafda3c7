#include "common/roofline/device.h"

#include "common/error.h"

namespace nanoserve::roofline {

namespace {

constexpr double kGB = 1e9;       // vendors quote bandwidth in decimal GB/s and TB/s
constexpr double kTFLOPS = 1e12;
constexpr double kMiB = 1024.0 * 1024.0;  // cache sizes are binary MB
constexpr double kGiB = 1024.0 * kMiB;    // except where noted, memory too (80GB = 80 GiB)

}  // namespace

// Dense figures only: NVIDIA's datasheets print tensor-core rates "with sparsity" (marked *)
// for Ampere, Hopper and the data-center Ada parts; the dense rate is half of it. SM count
// and L2 are not on the datasheets; they come from the architecture whitepapers named.
const std::vector<Device>& devices() {
  static const std::vector<Device> table = {
      // NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column): 2,039 GB/s, BF16/FP16
      // tensor 312 TFLOPS (624 with sparsity), FP32 19.5 TFLOPS, 80GB HBM2e.
      // NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs, 40 MB L2.
      {"a100", "A100-80GB", "NVIDIA A100 80GB SXM", 2039 * kGB, 312 * kTFLOPS, 19.5 * kTFLOPS, 108,
       40 * kMiB, 80 * kGiB,
       "NVIDIA A100 Tensor Core GPU datasheet; A100 architecture whitepaper (SMs, L2)"},
      // NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column): 3.35 TB/s, BF16/FP16 tensor
      // 1,979 TFLOPS with sparsity (989.5 dense), FP32 67 TFLOPS, 80GB HBM3.
      // NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs (SXM5), 50 MB L2.
      {"h100", "H100 SXM", "NVIDIA H100 SXM 80GB", 3350 * kGB, 989.5 * kTFLOPS, 67 * kTFLOPS, 132,
       50 * kMiB, 80 * kGiB,
       "NVIDIA H100 Tensor Core GPU datasheet; Hopper architecture whitepaper (SMs, L2)"},
      // NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column): 4.8 TB/s, BF16/FP16 tensor
      // 1,979 TFLOPS with sparsity (989.5 dense), FP32 67 TFLOPS, 141GB HBM3e (decimal GB).
      // Same GH100 die as the H100 SXM: 132 SMs, 50 MB L2 (Hopper whitepaper).
      {"h200", "H200", "NVIDIA H200 SXM 141GB", 4800 * kGB, 989.5 * kTFLOPS, 67 * kTFLOPS, 132,
       50 * kMiB, 141 * kGB,
       "NVIDIA H200 Tensor Core GPU datasheet; Hopper architecture whitepaper (SMs, L2)"},
      // NVIDIA L4 Tensor Core GPU datasheet: 300 GB/s, FP16/BF16 tensor 242 TFLOPS with
      // sparsity (121 dense), FP32 30.3 TFLOPS, 24GB GDDR6. NVIDIA Ada GPU architecture
      // whitepaper: 7,424 CUDA cores at 128 per SM = 58 SMs, 48 MB L2.
      {"l4", "L4", "NVIDIA L4 24GB", 300 * kGB, 121 * kTFLOPS, 30.3 * kTFLOPS, 58, 48 * kMiB,
       24 * kGiB, "NVIDIA L4 Tensor Core GPU datasheet; Ada architecture whitepaper (SMs, L2)"},
      // NVIDIA Ada GPU architecture whitepaper, GeForce RTX 4090 column: 1,008 GB/s, peak
      // FP16 tensor TFLOPS with FP32 accumulate 165.2 (330.3 with sparsity; GeForce parts run
      // fp32 accumulation at half the fp16-accumulate rate), FP32 82.6 TFLOPS, 128 SMs,
      // 72 MB L2, 24GB GDDR6X.
      {"rtx4090", "RTX 4090", "NVIDIA GeForce RTX 4090", 1008 * kGB, 165.2 * kTFLOPS, 82.6 * kTFLOPS, 128,
       72 * kMiB, 24 * kGiB, "NVIDIA Ada GPU architecture whitepaper (RTX 4090 column)"},
  };
  return table;
}

std::string device_keys() {
  std::string out;
  for (const Device& d : devices()) out += (out.empty() ? "" : ", ") + std::string(d.key);
  return out;
}

const Device& find_device(const std::string& key) {
  for (const Device& d : devices()) {
    if (key == d.key) return d;
  }
  throw InvalidArgument("--cost-device: unknown device '" + key + "' (known: " + device_keys() +
                        ")");
}

}  // namespace nanoserve::roofline
