// The device sampler (kernels/sampling.h, launch_sample): the host sampler's whole pipeline in
// one launch, one suite `sample` whose version column names the method: greedy, temperature,
// top-k 50, top-p 0.9, and all four filters together (T 0.8, top-k 50, top-p 0.9, min-p 0.05),
// over 1, 32 and 256 rows at the vocabularies of Llama 2 (32000) and Qwen2 (151936). In the
// simulator the times are CPU time, not GPU speed (main.cpp prints so).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/sampling.h"

namespace nanoserve::bench {
namespace {

struct Method {
  const char* name;
  SampleRowParams params;  // position is set per row
};

const Method kMethods[] = {
    {"v01-greedy", {0.0f, 0, 1.0f, 0.0f, 1, 0}},
    {"v01-temperature", {0.8f, 0, 1.0f, 0.0f, 1, 0}},
    {"v01-top-k", {1.0f, 50, 1.0f, 0.0f, 1, 0}},
    {"v01-top-p", {1.0f, 0, 0.9f, 0.0f, 1, 0}},
    {"v01-all", {0.8f, 50, 0.9f, 0.05f, 1, 0}},
};

struct SampleBuffers {
  DeviceBuffer<float> logits;             // (rows, vocab)
  DeviceBuffer<SampleRowParams> params;   // (rows)
  DeviceBuffer<int> tokens;               // (rows)
  DeviceBuffer<float> logprobs;           // (rows)
};

BenchCase sample_case(const Method& method, int rows, int vocab) {
  BenchCase c;
  c.kernel = "sample";
  c.version = method.name;
  c.dtype = "fp32";
  c.shape = dims({rows, vocab});
  // At least one read of the logits, the parameters, ids and logprobs written; the kernel
  // re-reads each row once per pass (up to ~40 with every filter), which a cache may serve.
  c.bytes = static_cast<double>(rows) *
            (static_cast<double>(vocab) * sizeof(float) + sizeof(SampleRowParams) +
             sizeof(int) + sizeof(float));
  const SampleRowParams base = method.params;
  c.prepare = [base, rows, vocab]() -> Launch {
    auto b = std::make_shared<SampleBuffers>();
    b->logits = DeviceBuffer<float>(pattern<float>(static_cast<std::size_t>(rows) * vocab, 1));
    std::vector<SampleRowParams> per_row(static_cast<std::size_t>(rows), base);
    for (int r = 0; r < rows; ++r) per_row[static_cast<std::size_t>(r)].position = unsigned(r);
    b->params = DeviceBuffer<SampleRowParams>(per_row);
    b->tokens = DeviceBuffer<int>(static_cast<std::size_t>(rows));
    b->logprobs = DeviceBuffer<float>(static_cast<std::size_t>(rows));
    return [b, rows, vocab](cudaStream_t s) {
      launch_sample(b->logits.get(), b->params.get(), rows, vocab, b->tokens.get(),
                    b->logprobs.get(), s);
    };
  };
  return c;
}

std::vector<BenchCase> sample_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  if (options.quick) {
    for (const Method& m : kMethods) cases.push_back(sample_case(m, 2, 1000));
    return cases;
  }
  for (int vocab : {32000, 151936}) {
    for (int rows : {1, 32, 256}) {
      for (const Method& m : kMethods) cases.push_back(sample_case(m, rows, vocab));
    }
  }
  return cases;
}

const bool kSampleRegistered = register_suite("sample", 160, sample_cases);

}  // namespace
}  // namespace nanoserve::bench
