// Examples of use of chapter 5's engine types: a quantized linear layer on the device and a
// quantized model file loaded with its tokenizer. Each TEST is one example: the code between
// its `//! [Name]` markers is what the type's documentation shows (Doxygen \snippet), and the
// test asserts what the example claims.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/allclose.h"
#include "common/engine/model/quantized_bundle.h"
#include "common/engine/model/quantized_device_model.h"
#include "common/model_bundle.h"
#include "common/quant/quant_io.h"
#include "common/quant/quantize_model.h"
#include "common/quant/rtn.h"
#include "common/tolerances.h"
#include "ch01/engine_test_support.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

TEST(Ch05Examples, QuantizedDeviceLinear) {
  NANOSERVE_REQUIRE_DEVICE();
  //! [QuantizedDeviceLinear]
  // W (4, 64): INT4 codes in groups of 32 columns, round-to-nearest.
  std::vector<float> w(4 * 64);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * float(i));
  quant::QuantScheme scheme;
  scheme.bits = 4;
  scheme.group_size = 32;
  const quant::QuantizedLinear q = quant::quantize_rtn(w.data(), 4, 64, scheme);
  const QuantizedDeviceLinear linear(q);
  EXPECT_EQ(linear.format(), scheme.label());
  EXPECT_EQ(linear.own_bytes(), q.bytes());  // codes and fp16 scales, no DeviceTensor

  // y = W' x for one row, where W' is the dequantized weight the kernel multiplies by.
  const std::vector<float> x(64, 0.5f);
  const DeviceBuffer<float> x_dev(x);
  DeviceBuffer<float> y_dev(4);
  linear.apply(x_dev.get(), y_dev.get(), /*rows=*/1, /*stream=*/0, Epilogue::kStore);
  const std::vector<float> w_dequantized = q.dequantize();
  std::vector<float> want(4, 0.0f);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 64; ++c) want[size_t(r)] += w_dequantized[size_t(r * 64 + c)] * x[size_t(c)];
  }
  EXPECT_TRUE(allclose(y_dev.to_host(), want, tol::kQuantizedKernelForward).ok);
  //! [QuantizedDeviceLinear]
}

TEST(Ch05Examples, QuantizedBundle) {
  const std::string path = testing::temp_dir() + "tiny-int4.nsqm";
  //! [QuantizedBundle]
  // `nanoserve quantize` in three lines: quantize, save, and load back with a tokenizer.
  quant::QuantizeOptions options;
  options.scheme.bits = 4;
  options.scheme.group_size = 32;
  quant::save_quantized_model(
      quant::quantize_model(load_model_bundle("synthetic:tiny").model, {}, options), path);

  EXPECT_TRUE(is_quantized_model_file(path));
  const QuantizedBundle bundle = load_quantized_bundle(path);
  EXPECT_EQ(bundle.model.scheme.bits, 4);
  EXPECT_EQ(bundle.model.base.config.name, "synthetic:tiny");  // whose tokenizer it takes
  ASSERT_NE(bundle.tokenizer, nullptr);
  EXPECT_LE(bundle.tokenizer->vocab_size(), bundle.model.base.config.vocab_size);  // ids fit
  //! [QuantizedBundle]
}

}  // namespace
}  // namespace nanoserve::engine
