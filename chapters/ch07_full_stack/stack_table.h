#pragma once
/// \file
/// \brief The stacked-gains table (chapter 7): one workload, the same model, one technique
/// added per row, as the article's closing table does —
///
///     fp16 static, contiguous KV      chapter 3's padded batches, each request its worst case
///     + continuous batching           chapter 4's scheduler, still contiguous KV
///     + paged KV (+ prefix caching)   chapter 2's blocks: memory for what is used, shared prompts
///     + INT4 AWQ  /  + INT4 GPTQ      chapter 5's weights: fewer bytes, and KV the memory budget
///                                     gains (each INT4 row replaces the previous one's weights)
///     + speculative decoding          chapter 6, inside the scheduler (on the first INT4 row)
///
/// — with three kinds of evidence kept apart in the output: the modeled time of every pass on
/// a named GPU (the roofline model), the simulator's counts (passes, rows, bytes, CPU time),
/// and measured GPU figures (none recorded yet: said so).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapters/ch07_full_stack/stack_engine.h"

namespace nanoserve::ch07 {

/// \brief The rows to add after the three batching/memory rows.
struct StackTableOptions {
  std::vector<std::string> quants = {"int4-awq", "int4-gptq"};  ///< one row each
  std::string spec = "ngram";  ///< the speculation row's drafter ("none": no such row)
  int gamma = 3;               ///< its draft tokens per step
  bool static_row = true;      ///< start from static batching (off: from continuous)
  int eval_docs = 8;           ///< documents of the text sample for perplexity (0: none)
};

/// \brief The rows' configurations, each the previous one plus one technique.
std::vector<StackConfig> stacked_rows(const StackTableOptions& options);

/// \brief The quality column of one row.
struct RowQuality {
  double perplexity = -1;  ///< of its weights on the text sample's documents (-1: not measured)
  double kl = -1;          ///< mean next-token KL divergence from the dense weights (nats)
  std::string tokens;      ///< exactness: "= row k" (same tokens), "same distribution", …
};

/// \brief Each row's quality (perplexity and KL for quantized weights through the oracle;
/// for the others, whether every request got the same tokens as the first row with the same
/// weights).
std::vector<RowQuality> row_quality(const std::vector<StackRun>& runs, WeightsCache& weights,
                                    const ModelBundle& bundle,
                                    const std::vector<std::vector<int>>& kl_sequences,
                                    int eval_docs);

/// \brief Prints the modeled table, the simulator's counts and the measured line (see the
/// file comment); `device` names the modeled GPU.
void print_stack(const std::vector<StackRun>& runs, const std::vector<RowQuality>& quality,
                 const roofline::Device& device);

/// \brief One JSON record per row (table "stack"): every column of both tables.
nlohmann::json stack_records(const std::vector<StackRun>& runs,
                             const std::vector<RowQuality>& quality);

}  // namespace nanoserve::ch07
