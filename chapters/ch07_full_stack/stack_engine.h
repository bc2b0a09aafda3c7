#pragma once
/// \file
/// \brief One run of the whole engine with a chosen set of techniques (chapter 7): static or
/// continuous batching, contiguous or paged KV (with prefix caching), dense or INT4/INT8
/// weights, with or without speculative decoding — on the model through the kernels, timed on
/// a modeled GPU.
///
///     StackConfig ──► weights (--quant) ─► KV pool: what the memory budget leaves after them
///                     │                      contiguous: blocks of max_model_len (one region
///                     │                      per request)   paged: blocks of 16 (+ prefix cache)
///                     ├─ static:     run_static  + ModelExecutor (chapter 3, padded rows)
///                     └─ continuous: run_continuous + ModelExecutor (+ Drafter: n-gram or a
///                                    draft model), swap or recompute preemption
///     every pass ──► its roofline time on the cost device advances the run's clock (modeled),
///                    its process CPU time is summed (simulated); rows and bytes are counted
///
/// "Contiguous" is the paged engine with one block of max_model_len per request: each request
/// reserves its worst case, as a pre-allocated contiguous cache does, and nothing is shared.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/model/serving_weights.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/serving_loop.h"
#include "common/harness/serving_metrics.h"
#include "common/model_bundle.h"
#include "common/roofline/device.h"

namespace nanoserve::ch07 {

/// \brief Which techniques a run uses (each flag of the program switches one).
struct StackConfig {
  std::string label;              ///< the row's name
  bool continuous = true;         ///< off: chapter 3's static batching
  bool paged = true;              ///< off: contiguous KV (one max_model_len region per request)
  bool prefix_caching = true;     ///< reuse cached full blocks (paged only)
  std::string quant = "none";     ///< a --quant value (engine::parse_weights_spec)
  std::string spec = "none";      ///< "none", "ngram", or "layers-K" (a draft model)
  int gamma = 3;                  ///< draft tokens per step when speculating
  engine::PreemptionMode preemption = engine::PreemptionMode::kAuto;  ///< continuous only
};

/// \brief What every run of a program shares.
struct StackSetup {
  const ModelBundle* bundle = nullptr;  ///< the model (fp32 host weights) and tokenizer
  DType dtype = DType::kF16;            ///< weights (but quantized linears) and activations
  DType kv_dtype = DType::kF16;         ///< the KV cache (`--kv-dtype`; default: `dtype`)
  int max_model_len = 256;              ///< tokens per request (prompt + output)
  int max_num_seqs = 32;                ///< running requests (paged)
  int max_num_batched_tokens = 256;     ///< rows per pass
  int block_size = 16;                  ///< paged KV block
  /// \brief Device memory for weights and KV: a run's KV pool is what its weights leave.
  std::int64_t memory_bytes = 0;
  int num_host_blocks = 0;              ///< host pool for swap preemption (0: recompute)
  const roofline::Device* device = nullptr;  ///< the GPU whose modeled time is the clock
  std::vector<std::vector<int>> calibration;  ///< GPTQ/AWQ fit on these
};

/// \brief What one run did.
struct StackRun {
  StackConfig config;                ///< how it ran
  engine::ServingRun run;            ///< the requests and steps, on the modeled clock
  harness::ServingMetrics metrics;   ///< throughput and latencies, modeled
  std::string weights;               ///< e.g. "fp16", "int4-g32-sym-awq"
  std::int64_t weight_bytes = 0;     ///< device bytes of the weights
  int kv_tokens = 0;                 ///< the KV pool in tokens
  int max_concurrency = 0;           ///< most requests the pool admits at once (contiguous)
  double kv_efficiency = 0;          ///< mean over passes: KV slots used / slots reserved
  long long passes = 0;              ///< target forward passes
  long long rows = 0;                ///< rows they computed (padding and drafts included)
  long long draft_passes = 0;        ///< draft-model passes
  double modeled_target_s = 0;       ///< Σ modeled time of the target's passes
  double modeled_draft_s = 0;        ///< Σ modeled time of the draft model's passes
  double modeled_bytes = 0;          ///< Σ bytes the modeled passes move
  double cpu_seconds = 0;            ///< process CPU time of the run (simulated on the CPU)
  double wall_seconds = 0;           ///< wall time of the run (measured, on a GPU build)
};

/// \brief The serving weights of each `--quant` value, built once (quantizing takes seconds).
class WeightsCache {
 public:
  /// \brief For `model` in `dtype`; GPTQ/AWQ fit on `calibration`. All must outlive it.
  WeightsCache(const Model& model, DType dtype, const std::vector<std::vector<int>>& calibration)
      : model_(model), dtype_(dtype), calibration_(calibration) {}
  /// \brief The weights `quant` names (throws what `load_serving_weights` throws).
  const engine::ServingWeights& get(const std::string& quant);

 private:
  const Model& model_;
  DType dtype_;
  const std::vector<std::vector<int>>& calibration_;
  std::map<std::string, std::unique_ptr<engine::ServingWeights>> cache_;
};

/// \brief Runs `requests` with `config` (see the file comment). Throws `InvalidArgument` when the
/// memory budget leaves no room for one request's KV, or for speculation without continuous
/// batching (the static batcher does not verify drafts).
StackRun run_stack(const StackSetup& setup, const StackConfig& config, WeightsCache& weights,
                   const std::vector<engine::Request>& requests);

}  // namespace nanoserve::ch07
