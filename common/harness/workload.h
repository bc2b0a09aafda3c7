#pragma once
/// \file
/// \brief Synthetic serving workloads (chapters 3 and 4): Poisson arrivals at a given rate,
/// prompt and output lengths from a fixed, uniform or long-tailed distribution, and the
/// conversion of trace lines into `Request`s. Every draw comes from Philox on
/// `RngStream::kWorkload`, so a (spec, seed) pair always gives the same workload.
///
/// The long-tailed choice is a log-normal cut to [min, max]: most chat requests are short,
/// a few are very long. For scale, the ShareGPT conversations vLLM is evaluated on average
/// 161 input and 338 output tokens, with long tails (Kwon et al., "Efficient Memory
/// Management for Large Language Model Serving with PagedAttention", SOSP 2023, Fig. 11);
/// a log-normal with sigma = 1 has mean = 1.65 x median, so median 100 / 200 resembles it.
/// Scale the medians down to the context of the model at hand.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/engine/serve/request.h"
#include "common/harness/trace.h"
#include "common/sampling/sampler.h"

namespace nanoserve {
class Tokenizer;
}

namespace nanoserve::harness {

/// \brief A distribution of token counts.
struct LengthDist {
  /// \brief The family.
  enum class Kind {
    kFixed,      ///< always `value`
    kUniform,    ///< an integer uniform in [min, max]
    kLogNormal,  ///< round(median · exp(sigma · z)), z ~ N(0, 1), clamped to [min, max]
  };
  Kind kind = Kind::kFixed;  ///< which family
  int value = 64;            ///< kFixed: the length
  int min = 1;               ///< kUniform / kLogNormal: smallest length
  int max = 64;              ///< kUniform / kLogNormal: largest length
  double median = 32;        ///< kLogNormal: exp(mu), the median before clamping
  double sigma = 1.0;        ///< kLogNormal: standard deviation of the log

  /// \brief Always `n`.
  static LengthDist fixed(int n);
  /// \brief Uniform over [lo, hi].
  static LengthDist uniform(int lo, int hi);
  /// \brief Log-normal with the given median and sigma, clamped to [lo, hi].
  static LengthDist log_normal(double median, double sigma, int lo, int hi);

  /// \brief One length from two uniform draws u1, u2 in [0, 1) (u2 is used by kLogNormal).
  int sample(double u1, double u2) const;
  /// \brief Throws `InvalidArgument` naming `what` (e.g. "prompt_len") and the field for
  /// lengths outside [1, kMaxTraceTokens], min > max, or a non-positive median or sigma.
  void validate(const std::string& what) const;
  /// \brief "fixed(64)", "uniform(8, 128)" or "lognormal(median 32, sigma 1, [4, 256])".
  std::string describe() const;
};

/// \brief A synthetic workload.
struct WorkloadSpec {
  int num_requests = 100;  ///< how many requests
  /// \brief Mean arrivals per second of the Poisson process; infinity = all at time 0
  /// (an offline batch).
  double rate = 10;
  LengthDist prompt_len = LengthDist::fixed(32);  ///< prompt lengths
  LengthDist max_tokens = LengthDist::fixed(32);  ///< output lengths (max_tokens)
  uint64_t seed = 0;                              ///< keys every draw
  /// \brief Throws `InvalidArgument` naming the field for a bad count (outside
  /// [1, kMaxTraceRequests]), rate or length.
  void validate() const;
};

/// \brief `num_requests` trace lines: the first request arrives at 0, the gaps between
/// arrivals are exponential with mean 1/rate (rounded to microseconds, so traces stay
/// readable), lengths come from the spec, and each request gets its own 64-bit seed.
/// Request i draws only from (seed, i), so the first k requests do not depend on num_requests.
/// Throws `InvalidArgument` when a request would arrive after `kMaxArrivalSeconds`.
std::vector<TraceRequest> generate_workload(const WorkloadSpec& spec);

/// \brief A synthetic prompt of `len` tokens from the request's `seed`: `bos_id` first when it
/// is >= 0, then ids uniform in [0, vocab_size).
std::vector<int> synthetic_prompt(int len, uint64_t seed, int vocab_size, int bos_id = -1);

/// \brief A workload shipped as a trace file under data/traces/.
struct BundledTrace {
  std::string file;         ///< file name in data/traces/
  std::string description;  ///< one line for the README and --help
  WorkloadSpec spec;        ///< what generated it
};

/// \brief The traces in data/traces/, with the specs that made them (a test checks the files
/// still equal the generator's output). Lengths fit a 256-token context.
std::vector<BundledTrace> bundled_traces();

/// \brief How trace lines become requests.
struct RequestDefaults {
  int vocab_size = 0;        ///< ids of synthetic prompts are in [0, vocab_size)
  int bos_id = -1;           ///< first token of synthetic prompts (-1: none)
  SamplingParams sampling;   ///< everything but the seed; a line's temperature overrides
  std::vector<int> stop_token_ids;        ///< e.g. {eos}
  std::vector<std::string> stop_strings;  ///< for every request
  const Tokenizer* tokenizer = nullptr;   ///< encodes text prompts (with BOS)
};

/// \brief Requests with ids 0, 1, … in trace order. Throws `InvalidArgument` for a text
/// prompt without a tokenizer, a vocabulary size < 1, or invalid sampling parameters.
std::vector<engine::Request> make_requests(const std::vector<TraceRequest>& trace,
                                   const RequestDefaults& defaults);

}  // namespace nanoserve::harness
