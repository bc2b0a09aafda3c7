#pragma once
/// \file
/// \brief What the tensor-parallel tests share (one process at TP = 1, `mpirun -np N` at
/// TP = N): greedy decoding of one prompt through the whole model on one device, and through
/// this rank's shard with rank 0 driving and the other ranks following its plans.

#include <algorithm>
#include <optional>
#include <vector>

#include "common/dist/communicator.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/engine/decode/tensor_parallel_decoder.h"

namespace nanoserve::testing {

/// \brief The tokens a greedy run chose and the logits each choice was made from.
struct GreedyRun {
  std::vector<int> tokens;                  ///< one per step
  std::vector<std::vector<float>> logits;   ///< (steps, vocab)
};

/// \brief `steps` greedy tokens after `prompt` through `decoder`.
inline GreedyRun greedy_steps(Decoder& decoder, const std::vector<int>& prompt, int steps) {
  GreedyRun run;
  std::vector<float> logits = decoder.forward(prompt, 0);
  int pos = static_cast<int>(prompt.size());
  for (int i = 0; i < steps; ++i) {
    const int t = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    run.logits.push_back(logits);
    run.tokens.push_back(t);
    if (i + 1 < steps) logits = decoder.forward({t}, pos++);
  }
  return run;
}

/// \brief The whole model on this device.
inline GreedyRun greedy_whole(const Model& model, const std::vector<int>& prompt, int steps,
                              DType act = DType::kF32) {
  const engine::DeviceModel device(model, act);
  engine::NaiveDecoder decoder(device, engine::CacheMode::kNaiveCache,
                               static_cast<int>(prompt.size()) + steps, act);
  return greedy_steps(decoder, prompt, steps);
}

/// \brief Every rank of `comm` calls it: rank 0 decodes through its shard and returns the
/// run; the others follow rank 0's plans over theirs and return an empty run.
inline GreedyRun greedy_tensor_parallel(const Model& model, dist::Communicator& comm,
                                        const std::vector<int>& prompt, int steps,
                                        DType act = DType::kF32) {
  engine::TensorParallelDecoder tp(comm, model, static_cast<int>(prompt.size()) + steps, act,
                                   act);
  if (!tp.leads()) {
    tp.follow();
    return {};
  }
  GreedyRun run = greedy_steps(tp.decoder(), prompt, steps);
  tp.stop();
  return run;
}

/// \brief The largest |Δ| between two runs' logits, over every step.
inline double max_logit_diff(const GreedyRun& a, const GreedyRun& b) {
  double worst = 0;
  for (std::size_t s = 0; s < a.logits.size() && s < b.logits.size(); ++s) {
    for (std::size_t i = 0; i < a.logits[s].size() && i < b.logits[s].size(); ++i) {
      worst = std::max(worst, double(std::abs(a.logits[s][i] - b.logits[s][i])));
    }
  }
  return worst;
}

}  // namespace nanoserve::testing
