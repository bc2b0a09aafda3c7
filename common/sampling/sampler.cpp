#include "common/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/sampling/rng.h"

namespace nanoserve {

void SamplingParams::validate() const {
  auto fail = [](const std::string& field, double value, const char* range) {
    throw InvalidArgument("sampling parameter " + field + "=" + std::to_string(value) +
                          " is outside " + range);
  };
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    fail("temperature", temperature, "[0, inf)");
  }
  if (top_k < 0) fail("top_k", top_k, "[0, vocab] (0 = off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) fail("top_p", top_p, "(0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) fail("min_p", min_p, "[0, 1]");
}

namespace {

void check_logits(const float* logits, int vocab) {
  if (vocab <= 0) throw InvalidArgument("sampler: vocab " + std::to_string(vocab) + " <= 0");
  bool any_finite = false;
  for (int i = 0; i < vocab; ++i) {
    if (std::isnan(logits[i]) || logits[i] == INFINITY) {
      throw InvalidArgument("sampler: logit of token " + std::to_string(i) + " is " +
                            std::to_string(logits[i]));
    }
    any_finite = any_finite || logits[i] != -INFINITY;
  }
  if (!any_finite) throw InvalidArgument("sampler: every logit is -inf");
}

/// A surviving token and its unnormalized probability exp((logit - max) / T).
struct Candidate {
  double w;
  int id;
};
/// Ranking used by top-k and top-p: more probable first, then lower id.
bool more_probable(const Candidate& a, const Candidate& b) {
  return a.w > b.w || (a.w == b.w && a.id < b.id);
}

}  // namespace

int argmax(const float* logits, int vocab) {
  if (vocab <= 0) throw InvalidArgument("argmax: vocab " + std::to_string(vocab) + " <= 0");
  int best = 0;
  for (int i = 0; i < vocab; ++i) {
    if (std::isnan(logits[i])) {
      throw InvalidArgument("argmax: logit of token " + std::to_string(i) + " is NaN");
    }
    if (logits[i] > logits[best]) best = i;  // strict: the first maximum wins ties
  }
  return best;
}

std::vector<double> probabilities(const float* logits, int vocab, const SamplingParams& params) {
  params.validate();
  check_logits(logits, vocab);
  std::vector<double> probs(vocab, 0.0);  // (vocab)
  if (params.greedy()) {
    probs[argmax(logits, vocab)] = 1.0;
    return probs;
  }

  // Temperature + softmax numerators; the max logit gets w = 1, so the sums cannot overflow.
  const double max = logits[argmax(logits, vocab)];
  const double t = params.temperature;
  std::vector<Candidate> kept;  // survivors of the filters so far, (<= vocab)
  kept.reserve(vocab);
  for (int i = 0; i < vocab; ++i) {
    if (logits[i] != -INFINITY) kept.push_back({std::exp((double(logits[i]) - max) / t), i});
  }

  // top-k: exactly k survivors, selected under the total order `more_probable`.
  if (params.top_k > 0 && params.top_k < int(kept.size())) {
    std::nth_element(kept.begin(), kept.begin() + (params.top_k - 1), kept.end(),
                     more_probable);
    kept.resize(params.top_k);
  }
  // top-p: shortest prefix of the ranking with mass >= p of what top-k left.
  if (params.top_p < 1.0f) {
    std::sort(kept.begin(), kept.end(), more_probable);
    double total = 0;
    for (const Candidate& c : kept) total += c.w;
    const double target = double(params.top_p) * total;
    double mass = 0;
    size_t n = 0;
    while (n < kept.size() && (n == 0 || mass < target)) mass += kept[n++].w;
    kept.resize(n);
  }
  // min-p: relative to the most probable survivor (the argmax itself: no filter above drops it).
  if (params.min_p > 0.0f) {
    double w_max = 0;
    for (const Candidate& c : kept) w_max = std::max(w_max, c.w);
    const double threshold = double(params.min_p) * w_max;
    kept.erase(std::remove_if(kept.begin(), kept.end(),
                              [&](const Candidate& c) { return c.w < threshold; }),
               kept.end());
  }

  double total = 0;
  for (const Candidate& c : kept) total += c.w;
  for (const Candidate& c : kept) probs[c.id] = c.w / total;
  return probs;
}

int sample_from(const std::vector<double>& weights, double u) {
  if (!(u >= 0.0 && u < 1.0)) {
    throw InvalidArgument("sample_from: u=" + std::to_string(u) + " is outside [0, 1)");
  }
  double total = 0;
  int last_positive = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] >= 0.0) || !std::isfinite(weights[i])) {
      throw InvalidArgument("sample_from: weight of token " + std::to_string(i) + " is " +
                            std::to_string(weights[i]));
    }
    total += weights[i];
    if (weights[i] > 0.0) last_positive = int(i);
  }
  if (last_positive < 0) throw InvalidArgument("sample_from: all weights are zero");
  const double target = u * total;
  double cumulative = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    cumulative += weights[i];
    if (target < cumulative) return int(i);
  }
  return last_positive;  // u * total rounded up to the full sum: the last possible token
}

int sample(const float* logits, int vocab, const SamplingParams& params, uint64_t position) {
  if (params.greedy()) {  // == sample_from(one-hot, any u), without the O(V) vector
    params.validate();
    check_logits(logits, vocab);
    return argmax(logits, vocab);
  }
  return sample_from(probabilities(logits, vocab, params),
                     uniform01(params.seed, position, RngStream::kSample));
}

double token_logprob(const float* logits, int vocab, int token) {
  check_logits(logits, vocab);
  if (token < 0 || token >= vocab) {
    throw InvalidArgument("token_logprob: token " + std::to_string(token) + " is outside [0, " +
                          std::to_string(vocab) + ")");
  }
  const double max = logits[argmax(logits, vocab)];
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max);
  return (double(logits[token]) - max) - std::log(sum);
}

}  // namespace nanoserve
