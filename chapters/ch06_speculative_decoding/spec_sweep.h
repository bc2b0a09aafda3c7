#pragma once
/// \file
/// \brief The chapter's measurement: for each draft and γ, how often drafts are accepted, how
/// many tokens a target forward yields, what a draft step costs, and the speedup measured next
/// to the one Leviathan et al. 2023 predict from α and c (`predicted_speedup`).
///
/// `measure_sweep_row` measures one row through any `RollbackDecoder` (chapter 6's program runs
/// it through the kernels, engine/spec_drafts.h); `spec_sweep` runs every row through the CPU
/// oracle, where two of the paper's premises do not hold:
///  - a verify over γ+1 positions is not about one step: the oracle is compute- and
///    overhead-bound, and Eigen packs the weights for every small multi-row product (measured
///    on stories260K: a 2-row forward costs ~4 one-row forwards, a 9-row one ~10), so
///    `verify_cost` is reported and `predicted_with_verify` uses it instead of 1;
///  - a dequantized draft costs as much as the target (a draft round's first forward even
///    has two rows), so quantized drafts show c ≥ 1 here.
/// The `c_bytes` columns show what the same α gives where a step's cost is its weight bytes
/// (bandwidth-bound decode on a GPU, with a verify costing one step).

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/generation/generate.h"
#include "common/model.h"
#include "common/speculative/proposer.h"
#include "common/speculative/rollback_decoder.h"

namespace nanoserve::ch06 {

/// \brief One proposer to measure.
struct SweepDraft {
  std::string label;             ///< row label, e.g. "layers-2", "int4-g32-sym-gptq", "ngram"
  const Model* model = nullptr;  ///< the draft model (outlives the sweep); nullptr = n-gram
  double bytes_ratio = 0;        ///< the draft's weight bytes / the target's fp32 weight bytes
};

/// \brief One request setting to measure (the same for every prompt).
struct SweepCase {
  std::string label;        ///< e.g. "greedy", "T=1", "T=2", "short"
  GenerateOptions options;  ///< token budget, sampling parameters, stop tokens
};

/// \brief One line of the table: a case × draft × γ over all prompts.
struct SweepRow {
  std::string case_label;          ///< `SweepCase::label`
  std::string draft;               ///< `SweepDraft::label`
  int gamma = 0;                   ///< draft tokens per round
  double alpha = 0;                ///< acceptance rate (`SpecStats::acceptance_rate`)
  double tokens_per_forward = 0;   ///< generated tokens per target verify forward
  /// \brief Tokens per verify forward predicted from α over the rounds the run had
  /// (`expected_tokens_per_round(alpha, rounds_offering)`): compare with `tokens_per_forward`.
  double predicted_tokens_per_forward = 0;
  double empty_rounds = 0;         ///< fraction of rounds whose proposer offered nothing
  std::vector<int64_t> rounds_offering;  ///< `SpecStats::rounds_offering` over all prompts
  /// \brief Median of: draft decode seconds per proposed token / plain decode step seconds.
  double c = 0;
  /// \brief Median of: seconds per verify forward / plain decode step seconds.
  double verify_cost = 0;
  /// \brief Median of: plain wall time / speculative wall time, prefills included.
  double measured_speedup = 0;
  /// \brief `predicted_speedup(alpha, rounds_offering, c)`: the paper's formula over the
  /// rounds the run had (a round offering k drafts costs k·c + 1 and yields E(α, k)).
  double predicted_speedup = 0;
  /// \brief The same with each round's verification at its measured cost in plain steps,
  /// k·c + verify_cost, instead of the paper's k·c + 1 (a verify is not free on a CPU).
  double predicted_with_verify = 0;
  double c_bytes = 0;              ///< `SweepDraft::bytes_ratio` (0 for n-gram)
  double predicted_at_bytes = 0;   ///< `predicted_speedup(alpha, rounds_offering, c_bytes)`
  int64_t generated = 0;           ///< tokens generated over all prompts
};

/// \brief One row: `repeats` times, plain decoding of every prompt through `target` and then
/// speculative decoding through `target` with `proposer` (interleaved, so both see the same
/// machine load); the timed ratios are the medians over the passes. `draft` gives the row's
/// label and bytes ratio (its `model` is not used). Speedups compare whole requests, prefills
/// included. Throws `InvalidArgument` for no prompts, repeats < 1 or bad options.
SweepRow measure_sweep_row(speculative::RollbackDecoder& target, speculative::Proposer& proposer, const SweepDraft& draft,
                           const SweepCase& c, const std::vector<std::vector<int>>& prompts,
                           int gamma, int repeats = 1);

/// \brief For every case × draft × γ, runs plain and speculative decoding over `prompts`
/// alternately `repeats` times, so both see the same machine load, and reports the medians of
/// the timed ratios (tokens and counts do not change between passes). Speedups compare whole
/// requests, prefills included. Progress lines go to `progress` when it is set. Throws
/// `InvalidArgument` for empty inputs or bad options.
std::vector<SweepRow> spec_sweep(const Model& target, const std::vector<SweepDraft>& drafts,
                                 const std::vector<std::vector<int>>& prompts,
                                 const std::vector<SweepCase>& cases,
                                 const std::vector<int>& gammas, int repeats = 1,
                                 const std::function<void(const std::string&)>& progress = {});

/// \brief The rows as a fixed-width text table with a header line.
std::string format_sweep_table(const std::vector<SweepRow>& rows);

/// \brief One row as a JSON record (the keys are the field names).
nlohmann::json to_json(const SweepRow& row);

}  // namespace nanoserve::ch06
