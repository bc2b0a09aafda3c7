#include "common/engine/serve/draft_model_drafter.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/sampling/rng.h"
#include "common/sampling/sampler.h"

namespace nanoserve::engine {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

RunnerOptions runner_options(const DeviceModel& draft, int target_vocab,
                             DraftModelDrafterOptions& o) {
  const ModelConfig& c = draft.config();
  if (c.vocab_size != target_vocab) {
    throw InvalidArgument("DraftModelDrafter: draft model '" + c.name + "' has " +
                          std::to_string(c.vocab_size) + " tokens but the target has " +
                          std::to_string(target_vocab) +
                          "; a draft must share the target's tokenizer");
  }
  if (o.max_seq_len == 0) o.max_seq_len = c.max_seq_len;
  if (o.max_seq_len < 1 || o.max_seq_len > c.max_seq_len || o.num_kv_blocks < 1 ||
      o.block_size < 1 || o.max_seqs < 1) {
    throw InvalidArgument("DraftModelDrafter: max_seq_len = " + std::to_string(o.max_seq_len) +
                          " (context " + std::to_string(c.max_seq_len) + "), num_kv_blocks = " +
                          std::to_string(o.num_kv_blocks) + ", block_size = " +
                          std::to_string(o.block_size) + ", max_seqs = " +
                          std::to_string(o.max_seqs) + ": each must be >= 1, within the context");
  }
  return {o.max_tokens_per_step, o.max_seqs, o.activation_dtype};  // the runner checks >= 1
}

}  // namespace

DraftModelDrafter::DraftModelDrafter(const DeviceModel& draft, int target_vocab_size,
                                     DraftModelDrafterOptions options)
    : model_(draft),
      options_(std::move(options)),
      runner_(draft, runner_options(draft, target_vocab_size, options_)),
      kv_(options_.num_kv_blocks, options_.block_size, /*enable_prefix_caching=*/false),
      cache_(draft.config(), options_.kv_dtype.value_or(runner_.activation_dtype()),
             options_.num_kv_blocks, options_.block_size, options_.max_seq_len) {}

void DraftModelDrafter::free_sequence(std::int64_t id) {
  if (kv_.contains(id)) kv_.free(id);
  seqs_.erase(id);
}

void DraftModelDrafter::retain(const std::vector<std::int64_t>& running_ids) {
  std::vector<std::int64_t> gone;
  for (const auto& entry : seqs_) {
    if (std::find(running_ids.begin(), running_ids.end(), entry.first) == running_ids.end()) {
      gone.push_back(entry.first);
    }
  }
  for (std::int64_t id : gone) free_sequence(id);
}

bool DraftModelDrafter::make_room(int blocks, const std::vector<std::int64_t>& keep) {
  if (blocks <= kv_.pool().num_free_blocks()) return true;
  std::vector<std::int64_t> ids;  // sorted: which request loses its draft KV is deterministic
  for (const auto& entry : seqs_) {
    if (std::find(keep.begin(), keep.end(), entry.first) == keep.end()) ids.push_back(entry.first);
  }
  std::sort(ids.begin(), ids.end());
  for (std::int64_t id : ids) {
    if (blocks <= kv_.pool().num_free_blocks()) break;
    free_sequence(id);
    ++stats_.dropped;
  }
  return blocks <= kv_.pool().num_free_blocks();
}

std::vector<float> DraftModelDrafter::run(const std::vector<Row>& rows) {
  std::vector<float> logits;
  ForwardBatch batch;
  const auto flush = [&] {
    if (batch.rows() == 0) return;
    if (options_.on_pass) options_.on_pass(batch);
    const std::vector<float> got = runner_.forward(batch, cache_);
    logits.insert(logits.end(), got.begin(), got.end());
    ++stats_.passes;
    stats_.rows += batch.rows();
    batch = ForwardBatch{};
  };
  for (const Row& row : rows) {
    const BlockTable& table = kv_.block_table(row.id);
    const int n = static_cast<int>(row.tokens.size());
    for (int done = 0; done < n;) {
      const int room = options_.max_tokens_per_step - batch.rows();
      const int take = std::min(room, n - done);
      const bool last = done + take == n;
      if (take == 0 ||
          (last && row.logits && int(batch.logit_rows.size()) == options_.max_seqs)) {
        flush();
        continue;
      }
      batch.add_chunk(row.id, row.tokens.data() + done, take, row.start_pos + done, &table);
      if (last && row.logits) batch.logit_rows.push_back(batch.rows() - 1);
      done += take;
    }
  }
  flush();
  return logits;
}

void DraftModelDrafter::propose(std::vector<DraftRequest>& batch) {
  const int bs = options_.block_size;
  std::vector<std::int64_t> ids;
  for (const DraftRequest& d : batch) ids.push_back(d.request->id());
  // 1. Plan each request: keep what its draft KV shares with its tokens, reserve the rest.
  std::vector<DraftRequest*> active;
  std::vector<Row> rows;
  int committed = 0;  // blocks promised to requests planned before (appended step by step)
  for (DraftRequest& d : batch) {
    d.proposal = {};
    const std::int64_t id = d.request->id();
    const std::vector<int>& ctx = d.request->seq.token_ids;
    const int L = static_cast<int>(ctx.size());
    const int gamma = std::min(d.gamma, options_.max_seq_len - L + 1);  // x_i fed at L-1+i
    if (gamma < 1) continue;
    int keep = 0;
    auto it = seqs_.find(id);
    if (it != seqs_.end()) {
      const std::vector<int>& cached = it->second.token_ids;
      keep = int(std::mismatch(cached.begin(), cached.end(), ctx.begin(), ctx.end()).first -
                 cached.begin());
      keep = std::min(keep, L - 1);
      kv_.rollback(id, it->second.num_tokens() - keep);  // the rejected drafts' KV
      it->second.token_ids.resize(std::size_t(keep));
    }
    const int have = it != seqs_.end() ? kv_.block_table(id).num_blocks() : 0;
    const int blocks = ceil_div(L + gamma - 1, bs) - have;  // up to position L + γ − 2
    if (!make_room(committed + blocks, ids)) {
      free_sequence(id);
      ++stats_.skipped;
      continue;
    }
    committed += blocks - (ceil_div(L, bs) - have);  // the drafts' blocks, appended later
    Sequence& seq = seqs_[id];
    seq.seq_id = id;
    const bool fresh = !kv_.contains(id);
    seq.token_ids = ctx;
    if (fresh) {
      kv_.allocate(seq, L);
    } else {
      kv_.append_slots(seq, L - keep);
    }
    stats_.catch_up_rows += L - keep - 1;
    d.gamma = gamma;
    active.push_back(&d);
    rows.push_back({id, std::vector<int>(ctx.begin() + keep, ctx.end()), keep, true});
  }
  // 2. γ passes: the catch-up (with q_1), then one row per request still drafting.
  const int vocab = model_.config().vocab_size;
  for (int j = 1; !active.empty(); ++j) {
    const std::vector<float> logits = run(rows);
    std::vector<DraftRequest*> next;
    rows.clear();
    for (std::size_t i = 0; i < active.size(); ++i) {
      DraftRequest& d = *active[i];
      const SamplingParams& params = d.request->seq.sampling;
      const float* row = logits.data() + i * std::size_t(vocab);
      const int pos = d.request->seq.num_tokens() + j - 1;  // where x_j will sit
      int x;
      if (params.greedy()) {
        x = argmax(row, vocab);
      } else {
        std::vector<double> q = probabilities(row, vocab, params);
        x = sample_from(q, uniform01(params.seed, std::uint64_t(pos), RngStream::kDraftSample));
        d.proposal.q.push_back(std::move(q));
      }
      d.proposal.tokens.push_back(x);
      if (j < d.gamma) {  // feed x_j to get q_{j+1}; x_γ itself is never fed
        Sequence& seq = seqs_.at(d.request->id());
        seq.token_ids.push_back(x);
        kv_.append_slots(seq, 1);
        rows.push_back({d.request->id(), {x}, pos, true});
        next.push_back(&d);
      }
    }
    active = std::move(next);
  }
}

}  // namespace nanoserve::engine
