// The device sampler's three steps (kernels/sampling.h), each a suite of its own so that
// `--kernel` can pick one: argmax (greedy), sampling_probs (temperature softmax) and
// sample_from (inverse-CDF draw), over 1, 32 and 256 rows (one per request) at the
// vocabularies of Llama 2 (32000) and Llama 3 (128256).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/sampling.h"

namespace nanoserve::bench {
namespace {

// `n` values in (0, 1): the fill pattern shifted up. Valid sampling weights (finite, > 0) and
// valid uniform draws (in [0, 1)) alike.
std::vector<float> unit_interval(std::size_t n, unsigned salt) {
  std::vector<float> v = pattern<float>(n, salt);
  for (float& x : v) x += 0.5f;
  return v;
}

enum class Step { kArgmax, kProbs, kSampleFrom };

const char* step_name(Step step) {
  return step == Step::kArgmax ? "argmax" : step == Step::kProbs ? "sampling_probs" : "sample_from";
}

// The buffers of one case; each step allocates the ones it uses.
struct RowBuffers {
  DeviceBuffer<float> values;   // (rows, vocab) logits or weights
  DeviceBuffer<float> per_row;  // (rows) temperatures or uniform draws
  DeviceBuffer<float> probs;    // (rows, vocab) output of sampling_probs
  DeviceBuffer<int> tokens;     // (rows) output of argmax and sample_from
};

BenchCase sampling_case(Step step, int rows, int vocab) {
  BenchCase c;
  c.kernel = step_name(step);
  c.version = "v01";
  c.dtype = "fp32";
  c.shape = dims({rows, vocab});
  const double row_bytes = static_cast<double>(rows) * vocab * sizeof(float);
  if (step == Step::kArgmax) {
    c.bytes = row_bytes + rows * sizeof(int);  // logits read, ids written
  } else if (step == Step::kProbs) {
    // logits read, probabilities written, temperatures read
    c.bytes = 2.0 * row_bytes + rows * sizeof(float);
  } else {
    // weights read once (the total; the prefix scan then re-reads part of each row, which a
    // cache may serve), draws read, ids written
    c.bytes = row_bytes + rows * (sizeof(float) + sizeof(int));
  }
  c.prepare = [step, rows, vocab]() -> Launch {
    const std::size_t n = static_cast<std::size_t>(rows) * vocab;
    auto b = std::make_shared<RowBuffers>();
    b->tokens = DeviceBuffer<int>(static_cast<std::size_t>(rows));
    if (step == Step::kArgmax) {
      b->values = DeviceBuffer<float>(pattern<float>(n, 1));
      return [b, rows, vocab](cudaStream_t s) {
        launch_argmax(b->values.get(), rows, vocab, b->tokens.get(), s);
      };
    }
    if (step == Step::kProbs) {
      b->values = DeviceBuffer<float>(pattern<float>(n, 1));
      // t = 0.8, a common chat setting; t = 0 would take the one-hot (greedy) shortcut.
      b->per_row = DeviceBuffer<float>(std::vector<float>(rows, 0.8f));
      b->probs = DeviceBuffer<float>(n);
      return [b, rows, vocab](cudaStream_t s) {
        launch_sampling_probs(b->values.get(), b->per_row.get(), rows, vocab, b->probs.get(), s);
      };
    }
    // Positive weights and draws spread over [0, 1): each row's scan stops at a different
    // place, on average halfway, as real draws do.
    b->values = DeviceBuffer<float>(unit_interval(n, 1));
    b->per_row = DeviceBuffer<float>(unit_interval(static_cast<std::size_t>(rows), 2));
    return [b, rows, vocab](cudaStream_t s) {
      launch_sample_from(b->values.get(), b->per_row.get(), rows, vocab, b->tokens.get(), s);
    };
  };
  return c;
}

std::vector<BenchCase> cases_of(Step step, const SuiteOptions& options) {
  if (options.quick) return {sampling_case(step, 2, 1000)};
  std::vector<BenchCase> cases;
  for (int vocab : {32000, 128256}) {
    for (int rows : {1, 32, 256}) cases.push_back(sampling_case(step, rows, vocab));
  }
  return cases;
}

std::vector<BenchCase> argmax_cases(const SuiteOptions& options) {
  return cases_of(Step::kArgmax, options);
}
std::vector<BenchCase> sampling_probs_cases(const SuiteOptions& options) {
  return cases_of(Step::kProbs, options);
}
std::vector<BenchCase> sample_from_cases(const SuiteOptions& options) {
  return cases_of(Step::kSampleFrom, options);
}

const bool kArgmaxRegistered = register_suite(step_name(Step::kArgmax), 130, argmax_cases);
const bool kProbsRegistered = register_suite(step_name(Step::kProbs), 140, sampling_probs_cases);
const bool kSampleRegistered = register_suite(step_name(Step::kSampleFrom), 150, sample_from_cases);

}  // namespace
}  // namespace nanoserve::bench
