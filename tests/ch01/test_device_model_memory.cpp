// Host memory of loading a checkpoint into the DeviceModel: a synthetic ~200 MB fp16 Hugging
// Face checkpoint loaded (a) through the fp32 host Model and (b) streamed tensor by tensor from
// the mapped file (HfCheckpointReader → DeviceModel's TensorSource constructor). Peak resident
// memory is read from the kernel in a child process per run (VmHWM after a reset through
// /proc/self/clear_refs; getrusage's ru_maxrss follows the same high-water mark). On the simulator the "device" copy
// is host memory too, so it is subtracted: what is left is what loading costs beyond it.
// The figures are printed (and quoted in docs/design.md); the assertions only check the shape
// of the result (an fp32 copy of the model in (a), none in (b)), with wide margins.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ch01/engine_test_support.h"
#include "common/engine/model/device_model.h"
#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/synthetic_model.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

/// A field of /proc/self/status in bytes ("VmHWM", "VmRSS"), or -1.
long long status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  }
  return -1;
}

/// Resets the peak-RSS mark to the current RSS (Linux: "5" to clear_refs); false if refused.
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

long long maxrss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<long long>(u.ru_maxrss) * 1024;
}

struct Peak {
  long long beyond_start;  // VmHWM - VmRSS at the start
  long long maxrss;        // getrusage, same mark
  long long device_bytes;  // the DeviceModel's weights
};

/// Runs `load` in a child process forked from this (small) one, so that neither run inherits
/// the other's freed-but-resident memory (the simulator's device allocations, malloc's arenas),
/// and returns its peak resident memory above the child's start.
template <class Load>
Peak measure(Load&& load) {
  int fd[2];
  if (pipe(fd) != 0) return {-1, -1, 0};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    Peak p{-1, -1, 0};
    if (reset_peak()) {
      const long long start = status_bytes("VmRSS");
      const long long start_maxrss = maxrss_bytes();
      const std::unique_ptr<DeviceModel> m = load();
      p.device_bytes = static_cast<long long>(m->weight_bytes());
      p.beyond_start = status_bytes("VmHWM") - start;
      p.maxrss = maxrss_bytes() - std::min(start, start_maxrss);
    }
    const ssize_t n = write(fd[1], &p, sizeof p);
    _exit(n == ssize_t(sizeof p) ? 0 : 1);
  }
  close(fd[1]);
  Peak p{-1, -1, 0};
  const ssize_t n = read(fd[0], &p, sizeof p);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n != ssize_t(sizeof p) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {-1, -1, 0};
  return p;
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
                                         [&r](const std::string& name, int layer, std::size_t) {
                                           return r.read(name, layer);
                                         });
  });
  const double mb = 1e6;
  std::printf("[ memory   ] file %.0f MB fp16; device copy %.0f MB\n", file / mb,
              full.device_bytes / mb);
  std::printf("[ memory   ] fp32 host Model then upload: peak +%.0f MB (%.0f MB beyond the device "
              "copy; ru_maxrss +%.0f MB)\n",
              full.beyond_start / mb, (full.beyond_start - full.device_bytes) / mb, full.maxrss / mb);
  std::printf("[ memory   ] streamed tensor by tensor:  peak +%.0f MB (%.0f MB beyond the device "
              "copy; ru_maxrss +%.0f MB)\n",
              streamed.beyond_start / mb, (streamed.beyond_start - streamed.device_bytes) / mb,
              streamed.maxrss / mb);
  EXPECT_EQ(streamed.device_bytes, full.device_bytes);
  // (a) holds the fp32 model (2x the fp16 file) beside the device copy; (b) one fp32 tensor
  // (the largest, the 8192 x 1024 embedding: 34 MB) and its rounded copy.
  EXPECT_GT(full.beyond_start - full.device_bytes, file * 3 / 2);
  EXPECT_LT(streamed.beyond_start - streamed.device_bytes, file / 2);
  std::filesystem::remove_all(dir);
}

TEST(Ch01DeviceModelMemory, StreamedTinyStoriesEqualsTheUploadOfTheHostModel) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(dir, "tinystories-656k");
  const Model host = load_hf_model(dir);
  const DeviceModel a(host, DType::kBF16);
  const HfCheckpointReader r(dir);
  const DeviceModel b(r.config(), DType::kBF16, [&r](const std::string& name, int layer, std::size_t) {
    return r.read(name, layer);
  });
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
