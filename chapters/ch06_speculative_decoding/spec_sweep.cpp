#include "chapters/ch06_speculative_decoding/spec_sweep.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "common/error.h"
#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/ngram_proposer.h"
#include "common/speculative/spec_decoder.h"

namespace nanoserve::ch06 {

namespace {

/// Plain decoding over every prompt: total wall time and seconds per single-token step.
struct Baseline {
  double total_seconds = 0;
  double step_seconds = 0;
};

Baseline plain_pass(speculative::RollbackDecoder& backend, const std::vector<std::vector<int>>& prompts,
                    const GenerateOptions& options) {
  Baseline b;
  double decode = 0;
  int64_t steps = 0;
  for (const std::vector<int>& prompt : prompts) {
    const GenerateResult r = generate(backend, prompt, options);
    b.total_seconds += r.prefill_seconds + r.decode_seconds;
    decode += r.decode_seconds;
    steps += std::max(0, r.generated() - 1);  // the first token comes from the prefill
  }
  b.step_seconds = steps > 0 ? decode / double(steps) : 0.0;
  return b;
}

/// Speculative decoding over every prompt, statistics summed.
speculative::SpecStats spec_pass(speculative::SpecDecoder& decoder, const std::vector<std::vector<int>>& prompts,
                    const GenerateOptions& options) {
  speculative::SpecStats sum;
  for (const std::vector<int>& prompt : prompts) {
    const speculative::SpecStats s = decoder.generate(prompt, options).stats;
    sum.rounds += s.rounds;
    sum.proposed += s.proposed;
    sum.accepted += s.accepted;
    sum.rejected += s.rejected;
    sum.generated += s.generated;
    sum.draft_forwards += s.draft_forwards;
    sum.prefill_seconds += s.prefill_seconds;
    sum.draft_prefill_seconds += s.draft_prefill_seconds;
    sum.target_seconds += s.target_seconds;
    sum.draft_seconds += s.draft_seconds;
    sum.decode_seconds += s.decode_seconds;
    if (sum.rounds_offering.size() < s.rounds_offering.size()) {
      sum.rounds_offering.resize(s.rounds_offering.size(), 0);
    }
    for (std::size_t k = 0; k < s.rounds_offering.size(); ++k) {
      sum.rounds_offering[k] += s.rounds_offering[k];
    }
  }
  return sum;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

SweepRow measure_sweep_row(speculative::RollbackDecoder& target, speculative::Proposer& proposer, const SweepDraft& draft,
                           const SweepCase& c, const std::vector<std::vector<int>>& prompts,
                           int gamma, int repeats) {
  if (prompts.empty() || repeats < 1) {
    throw InvalidArgument("measure_sweep_row: needs a prompt and repeats >= 1 (got repeats=" +
                          std::to_string(repeats) + ")");
  }
  speculative::SpecOptions spec_options;
  spec_options.gamma = gamma;
  speculative::SpecDecoder decoder(target, proposer, spec_options);

  // `repeats` interleaved plain/speculative passes, so that both see the same machine load;
  // the timed ratios are medians over the passes (counts never change).
  std::vector<double> speedup, c_ratio, verify;
  speculative::SpecStats s;
  for (int rep = 0; rep < repeats; ++rep) {
    const Baseline base = plain_pass(target, prompts, c.options);
    s = spec_pass(decoder, prompts, c.options);
    const double step = base.step_seconds > 0 ? base.step_seconds : 1.0;
    speedup.push_back(base.total_seconds / (s.total_prefill_seconds() + s.decode_seconds));
    c_ratio.push_back(s.proposed > 0 ? s.draft_seconds / double(s.proposed) / step : 0.0);
    verify.push_back(s.rounds > 0 ? s.target_seconds / double(s.rounds) / step : 0.0);
  }
  SweepRow row;
  row.case_label = c.label;
  row.draft = draft.label;
  row.gamma = gamma;
  row.alpha = s.acceptance_rate();
  row.tokens_per_forward = s.tokens_per_target_forward();
  row.c = median(c_ratio);
  row.verify_cost = median(verify);
  row.measured_speedup = median(speedup);
  // Predictions over the rounds the run really had (rounds offering fewer than γ drafts, or
  // none — an n-gram without a match — count as what they are).
  row.rounds_offering = s.rounds_offering;
  const std::vector<int64_t>& offered = row.rounds_offering;
  row.empty_rounds = s.rounds > 0 && !offered.empty() ? double(offered[0]) / double(s.rounds) : 0;
  row.predicted_tokens_per_forward = speculative::expected_tokens_per_round(row.alpha, offered);
  row.predicted_speedup = speculative::predicted_speedup(row.alpha, offered, row.c);
  row.predicted_with_verify =
      row.verify_cost > 0 ? speculative::predicted_speedup(row.alpha, offered, row.c, row.verify_cost)
                          : 0.0;
  row.c_bytes = draft.bytes_ratio;
  row.predicted_at_bytes = speculative::predicted_speedup(row.alpha, offered, row.c_bytes);
  row.generated = s.generated;
  return row;
}


namespace {

// The positions a row needs — its longest prompt, its token budget and one round's overshoot —
// not the context the model's file claims (2^20 positions of KV for each backend).
int row_capacity(const Model& m, const std::vector<std::vector<int>>& prompts, const SweepCase& c,
                 int gamma) {
  std::size_t longest = 0;
  for (const std::vector<int>& p : prompts) longest = std::max(longest, p.size());
  return static_cast<int>(std::min<std::int64_t>(
      m.config.max_seq_len, std::int64_t(longest) + c.options.max_new_tokens + gamma + 1));
}

}  // namespace

std::vector<SweepRow> spec_sweep(const Model& target, const std::vector<SweepDraft>& drafts,
                                 const std::vector<std::vector<int>>& prompts,
                                 const std::vector<SweepCase>& cases,
                                 const std::vector<int>& gammas, int repeats,
                                 const std::function<void(const std::string&)>& progress) {
  if (drafts.empty() || prompts.empty() || cases.empty() || gammas.empty() || repeats < 1) {
    throw InvalidArgument("spec_sweep: needs at least one draft, prompt, case and gamma, and "
                          "repeats >= 1 (got repeats=" + std::to_string(repeats) + ")");
  }
  std::vector<SweepRow> rows;
  for (const SweepCase& c : cases) {
    for (const SweepDraft& d : drafts) {
      for (int gamma : gammas) {
        speculative::OracleRollbackDecoder target_backend(target, row_capacity(target, prompts, c, gamma));
        std::unique_ptr<speculative::OracleRollbackDecoder> draft_backend;
        std::unique_ptr<speculative::Proposer> proposer;
        if (d.model != nullptr) {
          draft_backend = std::make_unique<speculative::OracleRollbackDecoder>(
              *d.model, row_capacity(*d.model, prompts, c, gamma));
          proposer = std::make_unique<speculative::DraftModelProposer>(*draft_backend,
                                                          target.config.vocab_size);
        } else {
          proposer = std::make_unique<speculative::NgramProposer>();
        }
        rows.push_back(
            measure_sweep_row(target_backend, *proposer, d, c, prompts, gamma, repeats));
        if (progress) progress(c.label + " " + d.label + " gamma=" + std::to_string(gamma));
      }
    }
  }
  return rows;
}

std::string format_sweep_table(const std::vector<SweepRow>& rows) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "%-8s %-24s %5s %6s %8s %8s %6s %6s %8s %8s %8s %8s %7s %10s\n", "case", "draft",
                "gamma", "alpha", "tok/fwd", "pred t/f", "empty", "c", "verify_x", "speedup",
                "predict", "pred_v", "c_bytes", "pred@bytes");
  out += line;
  for (const SweepRow& r : rows) {
    std::snprintf(line, sizeof line,
                  "%-8s %-24s %5d %6.3f %8.2f %8.2f %5.0f%% %6.3f %8.2f %8.2f %8.2f %8.2f "
                  "%7.3f %10.2f\n",
                  r.case_label.c_str(), r.draft.c_str(), r.gamma, r.alpha, r.tokens_per_forward,
                  r.predicted_tokens_per_forward, 100.0 * r.empty_rounds, r.c, r.verify_cost, r.measured_speedup, r.predicted_speedup,
                  r.predicted_with_verify, r.c_bytes, r.predicted_at_bytes);
    out += line;
  }
  return out;
}

nlohmann::json to_json(const SweepRow& r) {
  return {{"case", r.case_label},
          {"draft", r.draft},
          {"gamma", r.gamma},
          {"alpha", r.alpha},
          {"tokens_per_forward", r.tokens_per_forward},
          {"predicted_tokens_per_forward", r.predicted_tokens_per_forward},
          {"empty_rounds", r.empty_rounds},
          {"rounds_offering", r.rounds_offering},
          {"c", r.c},
          {"verify_cost", r.verify_cost},
          {"measured_speedup", r.measured_speedup},
          {"predicted_speedup", r.predicted_speedup},
          {"predicted_with_verify", r.predicted_with_verify},
          {"c_bytes", r.c_bytes},
          {"predicted_at_bytes", r.predicted_at_bytes},
          {"generated", r.generated}};
}

}  // namespace nanoserve::ch06
