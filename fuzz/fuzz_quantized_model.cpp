// libFuzzer target: NSQM quantized-model files from arbitrary bytes — header, tensor table,
// byte ranges and value checks. Only nanoserve::Error may escape (see fuzz_llama2c_bin.cpp);
// a model that loads must also dequantize.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "common/quant/quant_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nanoserve::quant::QuantizedModel m =
        nanoserve::quant::load_quantized_model_from_memory(data, size, "fuzz.nsqm");
    m.dequantize();
  } catch (const nanoserve::Error&) {
  }
  return 0;
}
