#include "common/speculative/ngram_proposer.h"

#include <algorithm>

#include "common/error.h"

namespace nanoserve::speculative {

namespace {
void check_ngram_range(int max_ngram, int min_ngram) {
  if (min_ngram < 1 || max_ngram < min_ngram) {
    throw InvalidArgument("n-gram proposer: need 1 <= min_ngram <= max_ngram, got min_ngram=" +
                          std::to_string(min_ngram) + " max_ngram=" + std::to_string(max_ngram));
  }
}
}  // namespace

std::vector<int> prompt_lookup(const std::vector<int>& context, int gamma, int max_ngram,
                               int min_ngram) {
  check_ngram_range(max_ngram, min_ngram);
  const int L = int(context.size());
  if (gamma <= 0) return {};
  for (int n = std::min(max_ngram, L - 1); n >= min_ngram; --n) {
    const auto suffix = context.end() - n;  // the last n tokens, context[L-n .. L-1]
    // Most recent first: later text is the better predictor of what comes next.
    for (int start = L - n - 1; start >= 0; --start) {
      if (std::equal(suffix, context.end(), context.begin() + start)) {
        const int from = start + n;  // the continuation, which may reach into the suffix
        const int count = std::min(gamma, L - from);
        return std::vector<int>(context.begin() + from, context.begin() + from + count);
      }
    }
  }
  return {};
}

NgramProposer::NgramProposer(int max_ngram, int min_ngram)
    : max_ngram_(max_ngram), min_ngram_(min_ngram) {
  check_ngram_range(max_ngram, min_ngram);
}

Proposal NgramProposer::propose(const std::vector<int>& context, int gamma,
                                const SamplingParams& /*params*/) {
  return {prompt_lookup(context, gamma, max_ngram_, min_ngram_), {}};
}

std::string NgramProposer::name() const {
  return "ngram(" + std::to_string(max_ngram_) + ".." + std::to_string(min_ngram_) + ")";
}

}  // namespace nanoserve::speculative
