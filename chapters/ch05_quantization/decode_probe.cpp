#include "chapters/ch05_quantization/decode_probe.h"

#include <time.h>

#include <algorithm>

#include "common/engine/kernel_backend.h"
#include "common/oracle/oracle_backend.h"

namespace nanoserve::ch05 {

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * double(t.tv_sec) + 1e-6 * double(t.tv_nsec);
}

namespace {

/// Forwards to the kernels, times each call, and runs the oracle on the same call when asked.
class ProbeBackend final : public DecodeBackend {
 public:
  ProbeBackend(DecodeBackend& kernels, DecodeBackend* oracle, Tolerance tol, DecodeRun& run)
      : kernels_(kernels), oracle_(oracle), tol_(tol), run_(run) {}
  void reset() override {
    kernels_.reset();
    if (oracle_) oracle_->reset();
  }
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override {
    const double start = cpu_ms();
    std::vector<float> logits = kernels_.forward(tokens, start_pos);
    const double ms = cpu_ms() - start;
    if (start_pos == 0) {
      run_.prefill_ms += ms;
    } else {
      run_.decode_ms += ms;
      ++run_.decode_steps;
    }
    if (oracle_) {
      const CloseResult r = allclose(logits, oracle_->forward(tokens, start_pos), tol_);
      run_.max_abs_diff = std::max(run_.max_abs_diff, r.max_abs_err);
      run_.check_ok = run_.check_ok && r.ok;
    }
    return logits;
  }
  int vocab_size() const override { return kernels_.vocab_size(); }
  int max_seq_len() const override { return kernels_.max_seq_len(); }
  std::string device_name() const override { return kernels_.device_name(); }

 private:
  DecodeBackend& kernels_;
  DecodeBackend* oracle_;
  Tolerance tol_;
  DecodeRun& run_;
};

}  // namespace

const char* probe_clock_name() { return "CPU time"; }

DecodeRun measure_decode(const engine::DeviceModel& device, const std::vector<int>& prompt,
                         int steps, int max_seq_len, const Model* oracle, Tolerance tolerance) {
  DecodeRun run;
  engine::KernelBackend kernels(device, engine::CacheMode::kNaiveCache, max_seq_len);
  std::unique_ptr<oracle::OracleBackend> reference;
  if (oracle != nullptr) reference = std::make_unique<oracle::OracleBackend>(*oracle, max_seq_len);
  ProbeBackend probe(kernels, reference.get(), tolerance, run);
  GenerateOptions opt;
  opt.max_new_tokens = steps;
  opt.sampling.temperature = 0.0f;  // greedy: no stop tokens, so every run times `steps` steps
  const GenerateResult r = generate(probe, prompt, opt);
  run.tokens = r.tokens;
  run.prompt_tokens = r.prompt_tokens;
  run.checked = oracle != nullptr;
  run.device = kernels.device_name();
  return run;
}

}  // namespace nanoserve::ch05
