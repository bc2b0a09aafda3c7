// Host memory of loading a checkpoint into the DeviceModel: a synthetic ~200 MB fp16 Hugging
// Face checkpoint loaded (a) through the fp32 host Model and (b) streamed tensor by tensor from
// the mapped file (HfCheckpointReader → DeviceModel's TensorSource constructor). Peak resident
// memory is read from the kernel in a child process per run (common/peak_memory.h). On the simulator the "device" copy
// is host memory too, so it is subtracted: what is left is what loading costs beyond it.
// The figures are printed (and quoted in docs/design.md); the assertions only check the shape
// of the result (an fp32 copy of the model in (a), none in (b)), with wide margins.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ch01/engine_test_support.h"
#include "common/engine/model/device_model.h"
#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/synthetic_model.h"
#include "common/peak_memory.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

struct Peak {
  long long beyond_start;  // peak resident memory above the child's start
  long long device_bytes;  // the DeviceModel's weights
};

/// Peak memory of `load` in a child process (common/peak_memory.h); -1 when not measurable.
template <class Load>
Peak measure(Load&& load) {
  const PeakMemory p = measure_peak_memory([&] {
    return std::array<std::int64_t, 4>{load()->weight_bytes(), 0, 0, 0};
  });
  if (!p.ok || !p.error.empty()) return {-1, 0};
  return {p.peak_bytes, p.reported[0]};
}

TEST(Ch01DeviceModelMemory, StreamingAnHfCheckpointHoldsOneTensorNotAnFp32CopyOfTheModel) {
  NANOSERVE_REQUIRE_DEVICE();
  // 97.7M parameters (8 layers of dim 1024, hidden 2816, GQA 16/4, vocab 8192, tied): 195 MB fp16.
  ModelConfig c;
  c.name = "memory-probe";
  c.dim = 1024;
  c.hidden_dim = 2816;
  c.n_layers = 8;
  c.n_heads = 16;
  c.n_kv_heads = 4;
  c.head_dim = 64;
  c.vocab_size = 8192;
  c.max_seq_len = 256;
  c.rope_style = RopeStyle::kRotateHalf;
  c.tied_classifier = true;
  const std::string dir = testing::temp_dir() + "memory-probe";
  std::filesystem::create_directories(dir);
  {
    const HfCheckpoint ck = save_hf(make_synthetic_model(c, 11), "F16");
    std::ofstream(dir + "/config.json") << ck.config_json;
    testing::write_temp_file("memory-probe/model.safetensors", ck.safetensors);
  }
  const long long file = static_cast<long long>(std::filesystem::file_size(dir + "/model.safetensors"));

  const Peak full = measure([&] {
    const Model host = load_hf_model(dir);
    return std::make_unique<DeviceModel>(host, DType::kF16);
  });
  if (full.beyond_start < 0) {
    GTEST_SKIP() << "could not measure in a child process (fork, or /proc/self/clear_refs refused)";
  }
  const Peak streamed = measure([&] {
    const HfCheckpointReader r(dir);
    return std::make_unique<DeviceModel>(r.config(), DType::kF16,
                                         [&r](const std::string& name, int layer,
                                              std::size_t offset, std::size_t count) {
                                           return r.read(name, layer, offset, count);
                                         });
  });
  const double mb = 1e6;
  std::printf("[ memory   ] file %.0f MB fp16; device copy %.0f MB\n", file / mb,
              full.device_bytes / mb);
  std::printf("[ memory   ] fp32 host Model then upload: peak +%.0f MB (%.0f MB beyond the device "
              "copy)\n",
              full.beyond_start / mb, (full.beyond_start - full.device_bytes) / mb);
  std::printf("[ memory   ] streamed range by range:    peak +%.0f MB (%.0f MB beyond the device "
              "copy)\n",
              streamed.beyond_start / mb, (streamed.beyond_start - streamed.device_bytes) / mb);
  EXPECT_EQ(streamed.device_bytes, full.device_bytes);
  // (a) holds the fp32 model (2x the fp16 file) beside the device copy; (b) one range of at
  // most DeviceTensor::kUploadChunkElements in fp32 (16 MB) and its encoding (measured: 21 MB
  // beyond the device copy; before ranges, one whole fp32 tensor: 34 MB).
  EXPECT_GT(full.beyond_start - full.device_bytes, file * 3 / 2);
  EXPECT_LT(streamed.beyond_start - streamed.device_bytes, 64LL << 20);
  std::filesystem::remove_all(dir);
}

TEST(Ch01DeviceModelMemory, StreamedTinyStoriesEqualsTheUploadOfTheHostModel) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(dir, "tinystories-656k");
  const Model host = load_hf_model(dir);
  const DeviceModel a(host, DType::kBF16);
  const HfCheckpointReader r(dir);
  const DeviceModel b(r.config(), DType::kBF16,
                      [&r](const std::string& name, int layer, std::size_t offset,
                           std::size_t count) { return r.read(name, layer, offset, count); });
  EXPECT_EQ(a.token_embedding().to_host_floats(), b.token_embedding().to_host_floats());
  for (int l = 0; l < host.config.n_layers; ++l) {
    for (auto member : {&DeviceLayer::wqkv, &DeviceLayer::wo, &DeviceLayer::w13, &DeviceLayer::w2}) {
      EXPECT_EQ((a.layer(l).*member)->tensors().front()->to_host_floats(),
                (b.layer(l).*member)->tensors().front()->to_host_floats())
          << "layer " << l;
    }
  }
  EXPECT_THROW(r.read("wx", 0), InvalidArgument);
  EXPECT_THROW(r.read("wq", host.config.n_layers), LoadError);  // no such layer: tensor missing
}

}  // namespace
}  // namespace nanoserve::engine
