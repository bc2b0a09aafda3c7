#pragma once
/// \file
/// \brief `StepProbe`: wraps the kernel decoder during a generation to time every forward
/// call and, with `--check`, to run the CPU oracle on the same call and record the largest
/// logit difference — the per-step table of chapter 1.

#include <string>
#include <vector>

#include "common/allclose.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/generation/generate.h"

namespace nanoserve::ch01 {

/// \brief One forward call of a generation.
struct StepRecord {
  int step = 0;         ///< 0 = the prompt, then one per fed-back token
  int position = 0;     ///< position of the last token of the call
  long long rows = 0;   ///< token rows the model computed (no-cache: the whole prefix)
  double ms = 0;        ///< time of the call, logits on the host included (`harness::step_seconds()`)
  double max_abs_diff = -1;  ///< max |logit − oracle logit|; -1 without --check
};

/// \brief A `Decoder` that forwards to a `NaiveDecoder` and records each call.
class StepProbe final : public Decoder {
 public:
  /// \brief Probes `inner`; with `oracle` (may be null) runs it alongside and compares each
  /// call's logits within `tolerance`. Both must outlive the probe.
  StepProbe(engine::NaiveDecoder& inner, Decoder* oracle, Tolerance tolerance);
  /// \brief Resets both decoders and the record.
  void reset() override;
  /// \brief Times `inner.forward`, then checks it against the oracle.
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override;
  /// \brief The inner decoder's vocabulary size.
  int vocab_size() const override { return inner_.vocab_size(); }
  /// \brief The inner decoder's context.
  int max_seq_len() const override { return inner_.max_seq_len(); }
  /// \brief The inner decoder's device.
  std::string device_name() const override { return inner_.device_name(); }

  /// \brief Every call so far.
  const std::vector<StepRecord>& steps() const { return steps_; }
  /// \brief True when every checked call was within the tolerance.
  bool check_ok() const { return check_ok_; }
  /// \brief The first failing comparison's summary ("" when none failed).
  const std::string& first_failure() const { return first_failure_; }

 private:
  engine::NaiveDecoder& inner_;
  Decoder* oracle_;
  Tolerance tolerance_;
  std::vector<StepRecord> steps_;
  bool check_ok_ = true;
  std::string first_failure_;
};

}  // namespace nanoserve::ch01
