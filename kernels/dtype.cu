// Host-side helpers of dtype.cuh.
#include <stdexcept>

#include "kernels/dtype.cuh"

namespace nanoserve {

DType parse_dtype(const std::string& name) {
  if (name == "fp32" || name == "f32" || name == "float32") return DType::kF32;
  if (name == "fp16" || name == "f16" || name == "half" || name == "float16") return DType::kF16;
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  throw std::invalid_argument("unknown dtype '" + name + "' (expected fp32, fp16 or bf16)");
}

}  // namespace nanoserve
