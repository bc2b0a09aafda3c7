#include "chapters/ch07_full_stack/stack_workload.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/data_path.h"
#include "common/error.h"
#include "common/eval/documents.h"
#include "common/quant/calibration.h"
#include "common/sampling/rng.h"

namespace nanoserve::ch07 {

namespace {

// Purposes (the `index` of the workload stream's draws), so that each draw has its own key.
enum : std::uint32_t { kUserLen = 1, kOutputLen = 2, kGap = 3, kSeed = 4, kTokens = 5 };

double draw(std::uint64_t seed, int i, std::uint32_t purpose, std::uint32_t word = 0) {
  return uniform01(seed, std::uint64_t(i), RngStream::kWorkload, purpose * 8 + word);
}

std::vector<std::vector<int>> story_tokens(const Tokenizer& tok, const std::string& text) {
  // The evaluation slice, document 0 skipped (the sample starts mid-story).
  const std::string docs = quant::select_documents(
      text, {quant::kEvaluationDocuments.first + 1, quant::kEvaluationDocuments.count - 1});
  std::vector<std::vector<int>> out;
  for (std::string_view d : eval::split_documents(docs, eval::kDefaultDelimiter)) {
    out.push_back(tok.encode(std::string(d), /*add_bos=*/false, /*add_eos=*/false));
  }
  return out;
}

}  // namespace

void StackWorkloadOptions::validate() const {
  const auto range = [](const char* field, long long v, long long lo, long long hi) {
    if (v < lo || v > hi) {
      throw InvalidArgument(std::string("workload: ") + field + " = " + std::to_string(v) +
                            " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
  };
  range("num_requests", num_requests, 1, 4096);
  range("num_prefixes", num_prefixes, 1, 64);
  range("prefix_tokens", prefix_tokens, 1, 4096);
  range("gamma", gamma, 0, engine::kMaxSpeculativeTokens);
  range("samples", samples, 1, engine::kMaxParallelSamples);
  if (!(rate >= 0) || std::isinf(rate)) {
    throw InvalidArgument("workload: rate = " + std::to_string(rate) +
                          " must be finite and >= 0 (0: all at t = 0)");
  }
  user_len.validate("user_len");
  output_len.validate("output_len");
}

StackWorkload make_stack_workload(const StackWorkloadOptions& o, const ModelBundle& bundle) {
  o.validate();
  const Tokenizer& tok = *bundle.tokenizer;
  const int vocab = bundle.model.config.vocab_size;
  const int bos = tok.bos_id();
  StackWorkload w;
  std::vector<std::vector<int>> stories;
  const auto sample = find_data_file("tinystories_valid_sample.txt");
  if (sample && bundle.format != ModelFormat::kSynthetic) {
    stories = story_tokens(tok, eval::read_text_file(*sample));
    w.source = "the TinyStories sample (openings of stories 1.." +
               std::to_string(o.num_prefixes) + ", then one story each)";
  } else {
    w.source = "random tokens (a synthetic model, or no text sample)";
  }
  const auto text = [&](int story, int n, std::uint64_t key) {  // n tokens of a story
    std::vector<int> t;
    if (!stories.empty()) {
      const std::vector<int>& s = stories[std::size_t(story) % stories.size()];
      t.assign(s.begin(), s.begin() + std::min<std::ptrdiff_t>(n, std::ptrdiff_t(s.size())));
    }
    for (int k = int(t.size()); k < n; ++k) {  // random tokens (or a story too short)
      t.push_back(int(draw(key, k, kTokens) * vocab) % vocab);
    }
    return t;
  };
  double t = 0;
  for (int i = 0; i < o.num_requests; ++i) {
    std::vector<int> prompt{bos >= 0 ? bos : 1};
    const std::vector<int> opening = text(i % o.num_prefixes, o.prefix_tokens - 1,
                                          std::uint64_t(i % o.num_prefixes) + 7919);
    prompt.insert(prompt.end(), opening.begin(), opening.end());
    const int u = o.user_len.sample(draw(o.seed, i, kUserLen), draw(o.seed, i, kUserLen, 1));
    const std::vector<int> own = text(o.num_prefixes + i, u, o.seed * 1000003u + std::uint64_t(i));
    prompt.insert(prompt.end(), own.begin(), own.end());
    SamplingParams sampling{o.temperature};
    const Philox4x32 s = random_bits(o.seed, std::uint64_t(i), RngStream::kWorkload, kSeed);
    sampling.seed = (std::uint64_t(s[0]) << 32) | s[1];
    const int max_tokens =
        o.output_len.sample(draw(o.seed, i, kOutputLen), draw(o.seed, i, kOutputLen, 1));
    if (o.rate > 0 && i > 0) t += -std::log(1.0 - draw(o.seed, i, kGap)) / o.rate;
    engine::Request r = engine::make_request(i, std::move(prompt), max_tokens, sampling, t);
    if (tok.eos_id() >= 0) r.stop_token_ids = {tok.eos_id()};
    r.num_speculative_tokens = o.gamma;
    r.n = o.samples;
    w.requests.push_back(std::move(r));
  }
  w.description = std::to_string(o.num_requests) + " requests" +
                  (o.rate > 0 ? ", Poisson " + std::to_string(o.rate) + "/s" : " at t = 0") +
                  ", " + std::to_string(o.num_prefixes) + " shared openings of " +
                  std::to_string(o.prefix_tokens) + " tokens + " + o.user_len.describe() +
                  ", outputs " + o.output_len.describe() +
                  (o.temperature > 0 ? ", T = " + std::to_string(o.temperature).substr(0, 4)
                                     : ", greedy");
  return w;
}

std::vector<std::vector<int>> calibration_for(const ModelBundle& bundle,
                                              const StackWorkload& workload) {
  const auto sample = find_data_file("tinystories_valid_sample.txt");
  if (sample && bundle.format != ModelFormat::kSynthetic) {
    return quant::calibration_sequences(
        quant::select_documents(eval::read_text_file(*sample), {quant::kCalibrationDocuments.first, 4}),
        *bundle.tokenizer, 128);
  }
  std::vector<std::vector<int>> out;
  for (const engine::Request& r : workload.requests) out.push_back(r.seq.token_ids);
  return out;
}

}  // namespace nanoserve::ch07
