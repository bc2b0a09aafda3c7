#include "chapters/ch05_quantization/decode_probe.h"

#include <time.h>

#include <algorithm>

#include "common/engine/decode/naive_decoder.h"
#include "common/harness/clocks.h"
#include "common/oracle/oracle_decoder.h"

namespace nanoserve::ch05 {

namespace {

/// Forwards to the kernels, times each call, and runs the oracle on the same call when asked.
class ProbeDecoder final : public Decoder {
 public:
  ProbeDecoder(Decoder& kernels, Decoder* oracle, Tolerance tol, DecodeRun& run)
      : kernels_(kernels), oracle_(oracle), tol_(tol), run_(run) {}
  void reset() override {
    kernels_.reset();
    if (oracle_) oracle_->reset();
  }
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override {
    const double start = 1e3 * harness::process_cpu_seconds();
    std::vector<float> logits = kernels_.forward(tokens, start_pos);
    const double ms = 1e3 * harness::process_cpu_seconds() - start;
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
  Decoder& kernels_;
  Decoder* oracle_;
  Tolerance tol_;
  DecodeRun& run_;
};

}  // namespace

const char* probe_clock_name() { return "CPU time"; }

DecodeRun measure_decode(const engine::DeviceModel& device, const std::vector<int>& prompt,
                         int steps, int max_seq_len, DType kv_dtype, const Model* oracle,
                         Tolerance tolerance) {
  DecodeRun run;
  engine::NaiveDecoder kernels(device, engine::CacheMode::kNaiveCache, max_seq_len, device.dtype(),
                               kv_dtype);
  std::unique_ptr<oracle::OracleDecoder> reference;
  if (oracle != nullptr) reference = std::make_unique<oracle::OracleDecoder>(*oracle, max_seq_len);
  ProbeDecoder probe(kernels, reference.get(), tolerance, run);
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
