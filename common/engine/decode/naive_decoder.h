#pragma once
/// \file
/// \brief `NaiveDecoder`: the kernel-based forward (`ModelRunner` + `NaiveKVCache`) as a
/// `Decoder`, so `generate()` runs on the GPU (or the simulator) exactly as it runs on
/// the oracle — in chapter 1's two modes:
///
///     no-cache     every step recomputes the whole sequence: a prefill of all n tokens, of
///                  which only the last row's logits are used — O(n) work for token n,
///                  O(n²) for a whole generation
///     naive-cache  the prompt is prefilled once; every later step computes one new position
///                  and attends over the cached keys and values — O(1) linear-layer work per
///                  token (attention still reads n cached rows)

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/engine/model/model_runner.h"
#include "common/engine/model/naive_kv_cache.h"
#include "common/eval/perplexity.h"
#include "common/generation/generate.h"

namespace nanoserve::engine {

/// \brief How a `NaiveDecoder` treats the keys and values of earlier positions.
enum class CacheMode {
  kNoCache,     ///< recompute the whole prefix every step
  kNaiveCache,  ///< keep them in a contiguous `NaiveKVCache`
};

/// \brief "no-cache" or "naive-cache".
const char* to_string(CacheMode mode);
/// \brief Parses "no-cache" / "naive-cache"; throws `InvalidArgument` naming the value otherwise.
CacheMode parse_cache_mode(const std::string& name);

/// \brief One sequence decoded through the kernels. Holds one region of a `NaiveKVCache` for
/// its whole life (the naive cache's reservation): taken when constructed, returned when
/// destroyed.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp NaiveDecoder
class NaiveDecoder final : public Decoder {
 public:
  /// \brief A self-contained decoder: its own runner and a one-region cache of `max_seq_len`
  /// positions (0 = the model's context). Activations are stored in `activation_dtype`
  /// (unset: the model's storage type), the cache in `kv_dtype` (unset: the activation type).
  /// With `cuda_graphs`, naive-cache decode steps replay one captured CUDA graph
  /// (`RunnerOptions::cuda_graphs`).
  NaiveDecoder(const DeviceModel& model, CacheMode mode, int max_seq_len = 0,
               std::optional<DType> activation_dtype = std::nullopt,
               std::optional<DType> kv_dtype = std::nullopt, bool cuda_graphs = false);
  /// \brief A decoder sharing `runner` and `cache` with others (several requests, each in its
  /// own region of `cache`; both must outlive it). Throws `InvalidArgument` when `cache` has no
  /// free region.
  NaiveDecoder(ModelRunner& runner, NaiveKVCache& cache, CacheMode mode);
  ~NaiveDecoder() override;
  NaiveDecoder(const NaiveDecoder&) = delete;
  NaiveDecoder& operator=(const NaiveDecoder&) = delete;

  /// \brief Forgets the sequence (its region stays reserved, at length 0).
  void reset() override;
  /// \brief Logits (vocab) after `tokens` placed at `start_pos ..`. Prompts longer than the
  /// runner's `max_tokens_per_step` run in several chunks. Throws `InvalidArgument` when the
  /// positions do not fit the cache (`max_seq_len`) or leave a gap after the cached prefix.
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override;
  /// \brief The vocabulary size (the runner's logits).
  int vocab_size() const override;
  /// \brief Positions the cache region holds.
  int max_seq_len() const override { return cache_->max_seq_len(); }
  /// \brief e.g. "CPU simulator (…) · kernels, fp16 weights, naive-cache".
  std::string device_name() const override;

  /// \brief The runner options a self-contained decoder of `max_seq_len` positions (0 = the
  /// context of `config`) makes its runner with: prompts in chunks of up to min(context, 512)
  /// rows, the last row's logits.
  static RunnerOptions runner_options(const ModelConfig& config, int max_seq_len,
                                      std::optional<DType> activation_dtype,
                                      bool cuda_graphs = false);

  /// \brief The mode it runs in.
  CacheMode mode() const { return mode_; }
  /// \brief The cache region it holds.
  int region() const { return region_; }
  /// \brief The cache its region lives in (reserved/used accounting).
  const NaiveKVCache& cache() const { return *cache_; }
  /// \brief The runner it runs on (its step counters).
  const ModelRunner& runner() const { return *runner_; }
  /// \brief Token rows pushed through the model since construction (the work: no-cache
  /// recomputes every prefix, naive-cache computes each position once).
  std::int64_t rows_computed() const { return rows_computed_; }

 private:
  std::unique_ptr<NaiveKVCache> owned_cache_;
  std::unique_ptr<ModelRunner> owned_runner_;
  ModelRunner* runner_;
  NaiveKVCache* cache_;
  CacheMode mode_;
  int region_;
  std::vector<int> history_;  // no-cache: every token of the sequence so far
  std::int64_t rows_computed_ = 0;
};

/// \brief The logits of every position of a fresh sequence through `runner` and a region of
/// `cache` (taken and returned per call): the kernel path as an `eval::LogitsFn`, for
/// `nanoserve eval --device gpu` and position-by-position checks against the oracle. Sequences
/// longer than the runner's rows run in chunks over the cache. Both must outlive the function.
eval::LogitsFn kernel_logits(ModelRunner& runner, NaiveKVCache& cache);

}  // namespace nanoserve::engine
