#include "common/engine/decode/paged_backend.h"

#include <algorithm>

#include "common/engine/model/device_info.h"
#include "common/error.h"

namespace nanoserve::engine {

PagedBackend::PagedBackend(ModelRunner& runner, KVCacheManager& manager, PagedKVCache& cache,
                           std::int64_t seq_id)
    : runner_(runner), manager_(manager), cache_(cache) {
  if (manager.contains(seq_id)) {
    throw InvalidArgument("PagedBackend: sequence " + std::to_string(seq_id) +
                          " already has a block table");
  }
  seq_.seq_id = seq_id;
}

PagedBackend::~PagedBackend() {
  if (manager_.contains(seq_.seq_id)) manager_.free(seq_.seq_id);
}

void PagedBackend::reset() {
  if (manager_.contains(seq_.seq_id)) manager_.free(seq_.seq_id);
  seq_.token_ids.clear();
  seq_.num_computed_tokens = 0;
}

std::vector<float> PagedBackend::forward(const std::vector<int>& tokens, int start_pos) {
  return run(tokens, start_pos, false);
}

std::vector<float> PagedBackend::forward_all(const std::vector<int>& tokens, int start_pos) {
  return run(tokens, start_pos, true);
}

void PagedBackend::truncate(int length) {
  if (length < 0 || length > this->length()) {
    throw InvalidArgument("PagedBackend::truncate: length " + std::to_string(length) +
                          " is outside [0, cached length " + std::to_string(this->length()) +
                          "]");
  }
  if (length == this->length()) return;
  manager_.rollback(seq_.seq_id, this->length() - length);
  seq_.token_ids.resize(static_cast<std::size_t>(length));
  seq_.num_computed_tokens = length;
}

std::vector<float> PagedBackend::run(const std::vector<int>& tokens, int start_pos,
                                     bool all_rows) {
  const int n = static_cast<int>(tokens.size());
  if (n == 0) throw InvalidArgument("PagedBackend::forward: no tokens");
  if (start_pos < 0 || start_pos > length()) {
    throw InvalidArgument("PagedBackend::forward: start_pos " + std::to_string(start_pos) +
                          " is outside [0, " + std::to_string(length()) + "] (the cached prefix)");
  }
  if (start_pos + n > max_seq_len()) {
    throw InvalidArgument("PagedBackend::forward: positions up to " +
                          std::to_string(start_pos + n - 1) + " do not fit max_seq_len " +
                          std::to_string(max_seq_len()));
  }
  if (start_pos < length()) truncate(start_pos);

  Sequence next = seq_;
  next.token_ids.insert(next.token_ids.end(), tokens.begin(), tokens.end());
  int first = start_pos;  // first row to compute
  if (!manager_.contains(seq_.seq_id)) {
    const int cached = manager_.allocate(next);  // start_pos == 0 here
    if (cached > 0 && all_rows) {
      manager_.free(seq_.seq_id);
      throw InvalidArgument("PagedBackend::forward_all: " + std::to_string(cached) +
                            " prompt tokens are in the prefix cache, so their logits would not "
                            "be computed; use forward() or a manager without prefix caching");
    }
    first = cached;
    rows_cached_ += cached;
  } else {
    cache_.copy_blocks(manager_.append_slots(next, n), 0);
  }
  seq_ = std::move(next);
  seq_.num_computed_tokens = seq_.num_tokens();

  // The rows to compute, in chunks the runner's buffers hold.
  const int end = start_pos + n;
  int step = runner_.options().max_tokens_per_step;
  if (all_rows) step = std::min(step, runner_.options().max_logit_rows);
  std::vector<float> logits;
  for (int begin = first; begin < end; begin += step) {
    const int stop = std::min(end, begin + step);
    std::vector<int> part(seq_.token_ids.begin() + begin, seq_.token_ids.begin() + stop);
    ForwardBatch batch =
        ForwardBatch::single(static_cast<int>(seq_.seq_id), std::move(part), begin,
                             all_rows ? LogitRows::kAll : LogitRows::kLast);
    if (!all_rows && stop != end) batch.logit_rows.clear();  // only the last row is needed
    std::vector<float> out = runner_.forward(batch, cache_);
    logits.insert(logits.end(), out.begin(), out.end());
    rows_computed_ += stop - begin;
  }
  return logits;
}

int PagedBackend::vocab_size() const { return runner_.model().config().vocab_size; }

std::string PagedBackend::name() const { return runner_.model().config().name; }

std::string PagedBackend::device_name() const {
  return engine::device_name() + " · kernels, " + dtype_name(runner_.model().dtype()) +
         " weights, paged KV (block " + std::to_string(manager_.block_size()) + ")";
}

}  // namespace nanoserve::engine
