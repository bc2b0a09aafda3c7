// DeviceModel built tensor by tensor from a TensorSource (how the GPU benchmarks upload
// synthetic 7B models without a host copy) equals the one built from the host Model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "common/engine/model/device_model.h"
#include "common/error.h"
#include "common/loaders/synthetic_model.h"

namespace nanoserve::engine {
namespace {

TEST(Ch01DeviceModelSource, SyntheticTensorsUploadedOneByOneEqualTheHostModel) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host = make_synthetic_model("synthetic:tiny", 77);
  const ModelConfig& c = host.config;
  const DeviceModel from_host(host, DType::kF16);
  const DeviceModel from_source(c, DType::kF16,
                                whole_tensor_source([&c](const std::string& name, int layer) {
                                  return synthetic_tensor(c, 77, name, layer);
                                }));
  EXPECT_EQ(from_source.weight_bytes(), from_host.weight_bytes());
  EXPECT_EQ(from_source.token_embedding().to_host_floats(),
            from_host.token_embedding().to_host_floats());
  for (int l = 0; l < c.n_layers; ++l) {
    for (auto member : {&DeviceLayer::wqkv, &DeviceLayer::wo, &DeviceLayer::w13, &DeviceLayer::w2}) {
      const auto* a = (from_source.layer(l).*member)->tensors().front();
      const auto* b = (from_host.layer(l).*member)->tensors().front();
      EXPECT_EQ(a->to_host_floats(), b->to_host_floats()) << "layer " << l;
    }
  }
}

TEST(Ch01DeviceModelSource, ATensorOfTheWrongSizeIsRefusedByName) {
  NANOSERVE_REQUIRE_DEVICE();
  const ModelConfig c = synthetic_config("synthetic:tiny");
  try {
    const DeviceModel::TensorSource whole = whole_tensor_source(
        [&c](const std::string& name, int layer) { return synthetic_tensor(c, 1, name, layer); });
    DeviceModel m(c, DType::kF32,
                  [&whole](const std::string& name, int layer, std::size_t offset,
                           std::size_t count) {
                    if (name == "w2" && layer == 1) return std::vector<float>(count - 1, 0.0f);
                    return whole(name, layer, offset, count);
                  });
    FAIL() << "a short tensor was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'w2' of layer 1"), std::string::npos) << e.what();
  }
}

TEST(Ch01DeviceModelSource, SyntheticTensorRefusesUnknownNamesAndLayers) {
  const ModelConfig c = synthetic_config("synthetic:tiny");
  EXPECT_THROW(synthetic_tensor(c, 1, "wx", 0), InvalidArgument);
  EXPECT_THROW(synthetic_tensor(c, 1, "wq", c.n_layers), InvalidArgument);
  EXPECT_THROW(synthetic_tensor(c, 1, "wq", -1), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine
