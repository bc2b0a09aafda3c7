#include "common/harness/modeled_executor.h"

#include <algorithm>

#include "common/engine/model/decode_graphs.h"
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
  roofline::PassShape shape = pass_shape(output);
  roofline::Assumptions a = assumptions;
  // The runner's rule (ModelRunner::graph_rows): one sampled row per sequence, no other rows.
  const bool decode = output.num_wasted_rows == 0 && !output.seqs.empty() &&
                      std::all_of(output.seqs.begin(), output.seqs.end(),
                                  [](const engine::ScheduledSequence& s) {
                                    return s.num_tokens == 1 && s.sample;
                                  });
  const int bucket = decode ? engine::graph_bucket(graph_buckets, int(shape.rows())) : 0;
  if (bucket > 0) {
    a.cuda_graph = true;
    // Padding rows: every linear pays for them, attention over nothing costs nothing.
    while (shape.rows() < bucket) shape.chunks.push_back({0, 1, false});
  }
  return roofline::pass_cost(config, shape, precision, *device, a).time_s();
}

}  // namespace nanoserve::harness
