#include "common/harness/modeled_executor.h"

#include "common/error.h"

namespace nanoserve::harness {

roofline::PassShape pass_shape(const engine::SchedulerOutput& output) {
  roofline::PassShape s;
  for (const engine::ScheduledSequence& seq : output.seqs) {
    s.chunks.push_back({seq.start_pos, seq.num_tokens, seq.sample});
  }
  for (int i = 0; i < output.num_wasted_rows; ++i) s.chunks.push_back({0, 1, false});
  return s;
}

double PassTimer::operator()(const engine::SchedulerOutput& output) const {
  if (device == nullptr) throw InvalidArgument("PassTimer: no device");
  return roofline::pass_cost(config, pass_shape(output), precision, *device, assumptions).time_s();
}

}  // namespace nanoserve::harness
