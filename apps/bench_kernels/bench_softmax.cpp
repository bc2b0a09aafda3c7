// Softmax: both versions over 1, 32 and 256 rows of logits at the vocabularies of Llama 2
// (32000) and Llama 3 (128256). v01 reads a row three times (max, sum, write), v02 twice
// (online max and sum, then write): on rows that outgrow the cache, the difference is bytes.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/softmax.h"

namespace nanoserve::bench {
namespace {

BenchCase softmax_case(int version, int rows, int vocab) {
  BenchCase c;
  c.kernel = "softmax";
  c.version = "v0" + std::to_string(version);
  c.dtype = "fp32";
  c.shape = dims({rows, vocab});
  c.bytes = 2.0 * rows * vocab * sizeof(float);  // each row read once, written once
  c.prepare = [version, rows, vocab]() -> Launch {
    struct Buffers {
      DeviceBuffer<float> x;    // (rows, vocab)
      DeviceBuffer<float> out;  // (rows, vocab)
    };
    auto b = std::make_shared<Buffers>();
    b->x = DeviceBuffer<float>(pattern<float>(static_cast<std::size_t>(rows) * vocab, 1));
    b->out = DeviceBuffer<float>(static_cast<std::size_t>(rows) * vocab);
    return [b, version, rows, vocab](cudaStream_t s) {
      launch_softmax(b->x.get(), rows, vocab, b->out.get(), s, version);
    };
  };
  return c;
}

std::vector<BenchCase> softmax_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  for (int v = 1; v <= kSoftmaxVersions; ++v) {
    if (options.quick) {
      cases.push_back(softmax_case(v, 2, 1000));
      continue;
    }
    for (int vocab : {32000, 128256}) {
      for (int rows : {1, 32, 256}) cases.push_back(softmax_case(v, rows, vocab));
    }
  }
  return cases;
}

const bool kRegistered = register_suite("softmax", 120, softmax_cases);

}  // namespace
}  // namespace nanoserve::bench
