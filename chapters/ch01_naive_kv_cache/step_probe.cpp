#include "chapters/ch01_naive_kv_cache/step_probe.h"

#include "common/harness/clocks.h"

namespace nanoserve::ch01 {

StepProbe::StepProbe(engine::NaiveDecoder& inner, Decoder* oracle, Tolerance tolerance)
    : inner_(inner), oracle_(oracle), tolerance_(tolerance) {}

void StepProbe::reset() {
  inner_.reset();
  if (oracle_ != nullptr) oracle_->reset();
  steps_.clear();
  check_ok_ = true;
  first_failure_.clear();
}

std::vector<float> StepProbe::forward(const std::vector<int>& tokens, int start_pos) {
  StepRecord r;
  r.step = static_cast<int>(steps_.size());
  r.position = start_pos + static_cast<int>(tokens.size()) - 1;
  const long long rows_before = inner_.rows_computed();
  const double t0 = 1e3 * harness::step_seconds();
  std::vector<float> logits = inner_.forward(tokens, start_pos);
  r.ms = 1e3 * harness::step_seconds() - t0;
  r.rows = inner_.rows_computed() - rows_before;
  if (oracle_ != nullptr) {  // outside the timed region: the oracle's time is not the engine's
    const CloseResult c = allclose(logits, oracle_->forward(tokens, start_pos), tolerance_);
    r.max_abs_diff = c.max_abs_err;
    if (!c.ok && check_ok_) {
      check_ok_ = false;
      first_failure_ = "step " + std::to_string(r.step) + ": " + c.summary();
    }
  }
  steps_.push_back(r);
  return logits;
}

}  // namespace nanoserve::ch01
