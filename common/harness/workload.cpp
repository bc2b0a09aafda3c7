#include "common/harness/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/error.h"
#include "common/sampling/rng.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::harness {

LengthDist LengthDist::fixed(int n) {
  LengthDist d;
  d.kind = Kind::kFixed;
  d.value = n;
  return d;
}

LengthDist LengthDist::uniform(int lo, int hi) {
  LengthDist d;
  d.kind = Kind::kUniform;
  d.min = lo;
  d.max = hi;
  return d;
}

LengthDist LengthDist::log_normal(double median, double sigma, int lo, int hi) {
  LengthDist d;
  d.kind = Kind::kLogNormal;
  d.median = median;
  d.sigma = sigma;
  d.min = lo;
  d.max = hi;
  return d;
}

int LengthDist::sample(double u1, double u2) const {
  switch (kind) {
    case Kind::kFixed:
      return value;
    case Kind::kUniform:
      return std::min(max, min + static_cast<int>(u1 * (double(max) - double(min) + 1.0)));
    case Kind::kLogNormal: {
      // Box–Muller; 1 - u1 is in (0, 1], so the log is finite.
      constexpr double kTwoPi = 6.283185307179586;
      const double z = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(kTwoPi * u2);
      const double x = std::round(median * std::exp(sigma * z));
      return static_cast<int>(std::clamp(x, double(min), double(max)));
    }
  }
  return value;
}

void LengthDist::validate(const std::string& what) const {
  auto fail = [&](const std::string& field, const std::string& problem) {
    throw InvalidArgument("workload " + what + "." + field + ": " + problem);
  };
  auto in_range = [&](const char* field, int v) {
    if (v < 1 || v > kMaxTraceTokens) {
      fail(field, std::to_string(v) + " is outside [1, " + std::to_string(kMaxTraceTokens) + "]");
    }
  };
  if (kind == Kind::kFixed) {
    in_range("value", value);
    return;
  }
  in_range("min", min);
  in_range("max", max);
  if (min > max) fail("min", std::to_string(min) + " > max " + std::to_string(max));
  if (kind == Kind::kLogNormal) {
    if (!(median > 0) || !std::isfinite(median)) fail("median", "must be finite and > 0");
    if (!(sigma > 0) || !std::isfinite(sigma)) fail("sigma", "must be finite and > 0");
  }
}

std::string LengthDist::describe() const {
  auto num = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  };
  switch (kind) {
    case Kind::kFixed:
      return "fixed(" + std::to_string(value) + ")";
    case Kind::kUniform:
      return "uniform(" + std::to_string(min) + ", " + std::to_string(max) + ")";
    case Kind::kLogNormal:
      return "lognormal(median " + num(median) + ", sigma " + num(sigma) + ", [" +
             std::to_string(min) + ", " + std::to_string(max) + "])";
  }
  return "?";
}

void WorkloadSpec::validate() const {
  if (num_requests < 1 || num_requests > kMaxTraceRequests) {
    throw InvalidArgument("workload num_requests = " + std::to_string(num_requests) +
                          " is outside [1, " + std::to_string(kMaxTraceRequests) + "]");
  }
  if (!(rate > 0)) {
    throw InvalidArgument("workload rate = " + std::to_string(rate) +
                          " requests/s must be > 0 (infinity: all at once)");
  }
  prompt_len.validate("prompt_len");
  max_tokens.validate("max_tokens");
}

namespace {

// The words of request i's draws: (spec seed, position = i, kWorkload, index = one of these).
enum DrawIndex : uint32_t { kGap = 0, kPromptLen = 1, kMaxTokens = 2, kSeed = 3 };

/// Two uniforms in [0, 1) for request i, field `index`.
std::pair<double, double> uniforms(uint64_t seed, int i, DrawIndex index) {
  const Philox4x32 r = random_bits(seed, uint64_t(i), RngStream::kWorkload, index);
  return {uniform_double(r[0], r[1]), uniform_double(r[2], r[3])};
}

}  // namespace

std::vector<TraceRequest> generate_workload(const WorkloadSpec& spec) {
  spec.validate();
  std::vector<TraceRequest> out(size_t(spec.num_requests));
  double t = 0;
  for (int i = 0; i < spec.num_requests; ++i) {
    TraceRequest& r = out[size_t(i)];
    if (i > 0 && std::isfinite(spec.rate)) {
      t += -std::log(1.0 - uniforms(spec.seed, i, kGap).first) / spec.rate;  // Exp(rate)
    }
    r.arrival_s = std::round(t * 1e6) / 1e6;
    if (r.arrival_s > kMaxArrivalSeconds) {  // a tiny rate: arrivals months away
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "workload rate = %g/s: request %d would arrive at %.4g s, past the limit of "
                    "1e7 s (raise the rate)", spec.rate, i, r.arrival_s);
      throw InvalidArgument(buf);
    }
    const auto [p1, p2] = uniforms(spec.seed, i, kPromptLen);
    r.prompt_len = spec.prompt_len.sample(p1, p2);
    const auto [m1, m2] = uniforms(spec.seed, i, kMaxTokens);
    r.max_tokens = spec.max_tokens.sample(m1, m2);
    const Philox4x32 s = random_bits(spec.seed, uint64_t(i), RngStream::kWorkload, kSeed);
    r.seed = (uint64_t(s[0]) << 32) | s[1];
  }
  return out;
}

std::vector<BundledTrace> bundled_traces() {
  const double kOffline = std::numeric_limits<double>::infinity();
  auto spec = [](int n, double rate, LengthDist prompt, LengthDist out, uint64_t seed) {
    WorkloadSpec s;
    s.num_requests = n;
    s.rate = rate;
    s.prompt_len = prompt;
    s.max_tokens = out;
    s.seed = seed;
    return s;
  };
  return {
      {"chat_poisson.jsonl",
       "64 chat-like requests, Poisson at 4/s, log-normal prompts and outputs (long tail)",
       spec(64, 4, LengthDist::log_normal(32, 1.0, 4, 128), LengthDist::log_normal(48, 1.0, 4, 128),
            1)},
      {"uniform_poisson.jsonl",
       "64 requests, Poisson at 8/s, prompts and outputs uniform in [16, 96]",
       spec(64, 8, LengthDist::uniform(16, 96), LengthDist::uniform(16, 96), 2)},
      {"fixed_offline.jsonl",
       "32 requests all at t = 0, 32-token prompts, 64 output tokens (an offline batch)",
       spec(32, kOffline, LengthDist::fixed(32), LengthDist::fixed(64), 3)},
  };
}

std::vector<int> synthetic_prompt(int len, uint64_t seed, int vocab_size, int bos_id) {
  if (len < 1 || vocab_size < 1) {
    throw InvalidArgument("synthetic_prompt: len = " + std::to_string(len) +
                          " and vocab_size = " + std::to_string(vocab_size) + " must be >= 1");
  }
  std::vector<int> tokens;
  tokens.reserve(size_t(len));
  if (bos_id >= 0) tokens.push_back(bos_id);
  // Index 16 keeps these draws apart from the workload's own fields (0..3).
  for (int j = int(tokens.size()); j < len; ++j) {
    tokens.push_back(int(random_bits(seed, uint64_t(j), RngStream::kWorkload, 16)[0] %
                         uint32_t(vocab_size)));
  }
  return tokens;
}

std::vector<engine::Request> make_requests(const std::vector<TraceRequest>& trace,
                                   const RequestDefaults& defaults) {
  if (defaults.vocab_size < 1) {
    throw InvalidArgument("make_requests: vocab_size = " + std::to_string(defaults.vocab_size) +
                          " must be >= 1");
  }
  std::vector<engine::Request> requests;
  requests.reserve(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceRequest& t = trace[i];
    std::vector<int> prompt;
    if (t.prompt.empty()) {
      prompt = synthetic_prompt(t.prompt_len, t.seed, defaults.vocab_size, defaults.bos_id);
    } else if (defaults.tokenizer != nullptr) {
      prompt = defaults.tokenizer->encode(t.prompt, /*add_bos=*/true, /*add_eos=*/false);
    } else {
      throw InvalidArgument("make_requests: request " + std::to_string(i) +
                            " has a text prompt but no tokenizer was given");
    }
    SamplingParams sampling = defaults.sampling;
    sampling.seed = t.seed;
    if (t.temperature) sampling.temperature = *t.temperature;
    sampling.validate();
    engine::Request r = engine::make_request(int64_t(i), std::move(prompt), t.max_tokens, sampling, t.arrival_s);
    r.stop_token_ids = defaults.stop_token_ids;
    r.stop_strings = defaults.stop_strings;
    requests.push_back(std::move(r));
  }
  return requests;
}

}  // namespace nanoserve::harness
