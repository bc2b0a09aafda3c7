#pragma once
/// \file
/// \brief `DraftModelDrafter`: a smaller model that shares the target's tokenizer drafts for
/// every speculating request at once — one batched forward per draft position — over paged KV
/// in a pool of its own (chapter 7).
///
/// Each request's draft KV follows its accepted tokens lazily, as chapter 6's
/// `DraftModelProposer` does for one sequence: at each call the draft keeps the longest prefix
/// its KV shares with the request's tokens (never the last token, whose logits it needs),
/// rolls the rest back through its own block manager, and feeds what is missing:
///
///     pass 1:  request A: [y]        (A's last round: 1 draft kept, y the correction)
///              request B: [p0 .. p9] (B's first proposal: its whole context, maybe in
///                                     several passes of at most max_tokens_per_step rows)
///              → q_1 for each, x_1 ~ q_1
///     pass j:  one row per request: x_{j-1} → q_j, x_j ~ q_j        (j = 2 .. γ)
///
/// Why its own pool, not the target's (vLLM v1 puts a draft model's layers in the target's
/// block table instead): the draft has its own layer count, KV width and type, so its blocks
/// have another size; its KV is a cache it can always rebuild from the tokens, so when its
/// pool runs out it drops a request's draft KV (the request then runs without drafts until
/// the draft catches up) — it never makes the scheduler preempt target work; and preemption,
/// swapping and prefix hits of the target never have to keep the draft's KV consistent. The
/// price: after a preemption or for a new request the draft re-reads the whole context.
///
/// Random draws: x_i ~ q_i with `uniform01(seed, position of x_i, RngStream::kDraftSample)`,
/// q_i = `probabilities(draft logits, the request's sampling)`; greedy requests take the argmax
/// and report no q (a point mass: their verification only compares tokens).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/engine/serve/drafter.h"

namespace nanoserve::engine {

/// \brief Sizes of a `DraftModelDrafter`'s pool and buffers.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp DraftModelDrafter
struct DraftModelDrafterOptions {
  int num_kv_blocks = 256;       ///< blocks of the draft's own pool
  int block_size = 16;           ///< positions per block
  int max_tokens_per_step = 256;  ///< rows of one draft pass (longer catch-ups are split)
  int max_seqs = 64;             ///< requests drafted per pass (logit rows)
  int max_seq_len = 0;           ///< positions per sequence; 0 = the draft's context
  std::optional<DType> activation_dtype;  ///< activations; unset = the draft's storage type
  std::optional<DType> kv_dtype;          ///< KV cache; unset = the activation type
  /// \brief Called with every draft pass before it runs (e.g. to model its cost on a GPU).
  std::function<void(const ForwardBatch&)> on_pass;
};

/// \brief Counters of a `DraftModelDrafter`.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp DraftModelDrafter
struct DraftModelDrafterStats {
  long long passes = 0;          ///< draft forward passes
  long long rows = 0;            ///< rows computed
  long long catch_up_rows = 0;   ///< of those, context the draft had not seen (or dropped)
  long long dropped = 0;         ///< requests whose draft KV was dropped for room
  long long skipped = 0;         ///< requests left without drafts (the pool was full)
};

/// \brief Drafts with a `DeviceModel` (see the file comment).
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp DraftModelDrafter
class DraftModelDrafter final : public Drafter {
 public:
  /// \brief Drafts with `draft` (which must outlive it) for a target whose vocabulary has
  /// `target_vocab_size` tokens. Throws `InvalidArgument` when the vocabularies differ (a
  /// draft must share the target's tokenizer), for sizes < 1 or a `max_seq_len` beyond the
  /// draft's context; `CudaError` when the device is full.
  DraftModelDrafter(const DeviceModel& draft, int target_vocab_size,
                    DraftModelDrafterOptions options = {});

  /// \brief Up to γ tokens per request (see the file comment). Requests whose catch-up and
  /// drafts do not fit the pool, even after dropping the draft KV of requests outside the
  /// batch, get no drafts.
  void propose(std::vector<DraftRequest>& batch) override;
  /// \brief Frees the draft KV of every request not in `running_ids`.
  void retain(const std::vector<std::int64_t>& running_ids) override;
  /// \brief The draft's vocabulary size.
  int vocab_size() const override { return model_.config().vocab_size; }
  /// \brief "draft:" + the draft's name.
  std::string name() const override { return "draft:" + model_.config().name; }

  /// \brief The counters.
  const DraftModelDrafterStats& stats() const { return stats_; }
  /// \brief The draft's block manager (tables, free blocks).
  const KVCacheManager& kv() const { return kv_; }
  /// \brief The draft model.
  const DeviceModel& model() const { return model_; }

 private:
  struct Row {
    std::int64_t id;   ///< the request
    std::vector<int> tokens;
    int start_pos;
    bool logits;       ///< the chunk's last row returns logits
  };
  /// Runs `rows` in as few passes as the buffers allow; returns the logits of the chunks that
  /// asked for them, in order, (chunks, vocab) row-major.
  std::vector<float> run(const std::vector<Row>& rows);
  void free_sequence(std::int64_t id);
  /// Makes room for `blocks` more blocks for request `id`, dropping the draft KV of requests
  /// not in `keep`; false when even that is not enough.
  bool make_room(int blocks, const std::vector<std::int64_t>& keep);

  const DeviceModel& model_;
  DraftModelDrafterOptions options_;
  ModelRunner runner_;
  KVCacheManager kv_;  // the draft's own pool, no prefix caching
  PagedKVCache cache_;
  std::unordered_map<std::int64_t, Sequence> seqs_;  // per request: tokens behind its draft KV
  DraftModelDrafterStats stats_;
};

}  // namespace nanoserve::engine
