#include "common/speculative/rejection.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/sampling/rng.h"

namespace nanoserve::speculative {

std::vector<double> residual_weights(const std::vector<double>& p, const std::vector<double>& q) {
  if (p.size() != q.size()) {
    throw InvalidArgument("speculative residual: p has " + std::to_string(p.size()) +
                          " entries but q has " + std::to_string(q.size()));
  }
  std::vector<double> r(p.size());  // (vocab)
  for (size_t i = 0; i < p.size(); ++i) r[i] = std::max(0.0, p[i] - q[i]);
  return r;
}

TokenVerdict accept_or_resample(const std::vector<double>& p, const std::vector<double>& q, int x,
                                double u_accept, double u_residual) {
  if (p.size() != q.size() || x < 0 || size_t(x) >= p.size()) {
    throw InvalidArgument("speculative verify: draft token " + std::to_string(x) +
                          " with p of size " + std::to_string(p.size()) + " and q of size " +
                          std::to_string(q.size()));
  }
  if (!(q[size_t(x)] > 0.0)) {
    throw InvalidArgument("speculative verify: draft token " + std::to_string(x) +
                          " has q(x) = 0, so the draft cannot have proposed it");
  }
  // BEGIN EXERCISE ch06.1 "The rejection rule: accept, or resample from the residual" points=20 minutes=30
  // HINT: Accept x when u_accept < p(x) / q(x). Otherwise draw from the residual
  // HINT: max(0, p - q) (residual_weights) with sample_from(weights, u_residual); when the
  // HINT: residual is all zeros (p == q) draw from p (Leviathan et al. 2023, Theorem 1).
  // STUB: (void)u_accept; (void)u_residual;
  // STUB: throw Error("exercise ch06.1 not done: accept_or_resample");
  // u < p/q, written without the division (q(x) > 0); p >= q always accepts since u < 1.
  if (u_accept * q[size_t(x)] < p[size_t(x)]) return {true, x};
  std::vector<double> r = residual_weights(p, q);
  const bool empty = std::all_of(r.begin(), r.end(), [](double w) { return w == 0.0; });
  return {false, sample_from(empty ? p : r, u_residual)};
  // END EXERCISE
}

namespace {

void check_proposal(const Proposal& proposal, int vocab) {
  for (int x : proposal.tokens) {
    if (x < 0 || x >= vocab) {
      throw InvalidArgument("speculative verify: draft token " + std::to_string(x) +
                            " is outside the target's vocabulary [0, " + std::to_string(vocab) +
                            ")");
    }
  }
  if (!proposal.q.empty() && proposal.q.size() != proposal.tokens.size()) {
    throw InvalidArgument("speculative verify: " + std::to_string(proposal.tokens.size()) +
                          " draft tokens but " + std::to_string(proposal.q.size()) + " q rows");
  }
  for (const std::vector<double>& row : proposal.q) {
    if (row.size() != size_t(vocab)) {
      throw InvalidArgument("speculative verify: a q row has " + std::to_string(row.size()) +
                            " entries but the target's vocabulary has " + std::to_string(vocab));
    }
  }
}

}  // namespace

VerifyResult verify_proposal(const std::vector<float>& target_logits, int vocab,
                             const Proposal& proposal, const SamplingParams& params,
                             int64_t first_position) {
  check_proposal(proposal, vocab);
  const int k = int(proposal.tokens.size());
  if (vocab <= 0 || target_logits.size() != size_t(k + 1) * size_t(vocab)) {
    throw InvalidArgument("speculative verify: expected " + std::to_string(k + 1) + " x " +
                          std::to_string(vocab) + " target logits, got " +
                          std::to_string(target_logits.size()));
  }
  auto row = [&](int i) { return target_logits.data() + size_t(i) * size_t(vocab); };

  VerifyResult result;
  for (int i = 0; i < k; ++i) {
    const int x = proposal.tokens[size_t(i)];
    const uint64_t pos = uint64_t(first_position + i);
    if (params.greedy()) {
      const int best = argmax(row(i), vocab);
      result.tokens.push_back(best);
      if (best != x) return result;  // the target's own choice replaces the first mismatch
    } else {
      const std::vector<double> p = probabilities(row(i), vocab, params);
      std::vector<double> point;  // one-hot q for a deterministic proposal
      if (proposal.q.empty()) {
        point.assign(size_t(vocab), 0.0);
        point[size_t(x)] = 1.0;
      }
      const TokenVerdict v = accept_or_resample(
          p, proposal.q.empty() ? point : proposal.q[size_t(i)], x,
          uniform01(params.seed, pos, RngStream::kSpecAccept),
          uniform01(params.seed, pos, RngStream::kSpecResidual));
      result.tokens.push_back(v.token);
      if (!v.accepted) return result;
    }
    ++result.accepted;
  }
  // Every draft kept: the last row gives one more token for free, drawn as plain sampling
  // would draw it at that position.
  result.bonus = true;
  result.tokens.push_back(sample(row(k), vocab, params, uint64_t(first_position + k)));
  return result;
}

}  // namespace nanoserve::speculative
