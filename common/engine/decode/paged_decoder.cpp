#include "common/engine/decode/paged_decoder.h"

#include <algorithm>
#include <utility>

#include "common/engine/model/device_info.h"
#include "common/error.h"

namespace nanoserve::engine {

namespace {

int checked_max_seq_len(const DeviceModel& model, const PagedDecoderOptions& o) {
  const int context = model.config().max_seq_len;
  const int n = o.max_seq_len == 0 ? context : o.max_seq_len;
  if (n < 1 || n > context) {
    throw InvalidArgument("PagedDecoder('" + model.config().name + "'): max_seq_len " +
                          std::to_string(o.max_seq_len) + " is outside [1, " +
                          std::to_string(context) + "] (0 = the model's context)");
  }
  if (o.block_size < 1 || o.max_logit_rows < 1 || o.max_tokens_per_step < o.max_logit_rows) {
    throw InvalidArgument("PagedDecoder: need block_size >= 1 and 1 <= max_logit_rows <= "
                          "max_tokens_per_step, got " + std::to_string(o.block_size) + ", " +
                          std::to_string(o.max_logit_rows) + ", " +
                          std::to_string(o.max_tokens_per_step));
  }
  return n;
}

}  // namespace

PagedDecoder::PagedDecoder(ModelRunner& runner, KVCacheManager& manager, PagedKVCache& cache,
                           std::int64_t seq_id)
    : runner_(&runner), manager_(&manager), cache_(&cache) {
  if (manager.contains(seq_id)) {
    throw InvalidArgument("PagedDecoder: sequence " + std::to_string(seq_id) +
                          " already has a block table");
  }
  seq_.seq_id = seq_id;
}

PagedDecoder::PagedDecoder(std::unique_ptr<DeviceModel> model, PagedDecoderOptions options,
                           std::string label)
    : owned_model_(std::move(model)), label_(std::move(label)) {
  if (!owned_model_) throw InvalidArgument("PagedDecoder: no model");
  const int max_seq_len = checked_max_seq_len(*owned_model_, options);
  const int blocks = (max_seq_len + options.block_size - 1) / options.block_size + 1;
  owned_runner_ = std::make_unique<ModelRunner>(
      *owned_model_, RunnerOptions{options.max_tokens_per_step, options.max_logit_rows,
                                   options.activation_dtype});
  owned_manager_ = std::make_unique<KVCacheManager>(blocks, options.block_size,
                                                    /*enable_prefix_caching=*/false);
  owned_cache_ = std::make_unique<PagedKVCache>(
      owned_model_->config(), options.kv_dtype.value_or(owned_runner_->activation_dtype()), blocks,
      options.block_size, max_seq_len);
  runner_ = owned_runner_.get();
  manager_ = owned_manager_.get();
  cache_ = owned_cache_.get();
  seq_.seq_id = 0;
}

PagedDecoder::~PagedDecoder() {
  if (manager_->contains(seq_.seq_id)) manager_->free(seq_.seq_id);
}

void PagedDecoder::reset() {
  if (manager_->contains(seq_.seq_id)) manager_->free(seq_.seq_id);
  seq_.token_ids.clear();
  seq_.num_computed_tokens = 0;
}

std::vector<float> PagedDecoder::forward(const std::vector<int>& tokens, int start_pos) {
  return run(tokens, start_pos, false);
}

std::vector<float> PagedDecoder::forward_all(const std::vector<int>& tokens, int start_pos) {
  return run(tokens, start_pos, true);
}

void PagedDecoder::truncate(int length) {
  if (length < 0 || length > this->length()) {
    throw InvalidArgument("PagedDecoder::truncate: length " + std::to_string(length) +
                          " is outside [0, cached length " + std::to_string(this->length()) +
                          "]");
  }
  if (length == this->length()) return;
  manager_->rollback(seq_.seq_id, this->length() - length);
  seq_.token_ids.resize(static_cast<std::size_t>(length));
  seq_.num_computed_tokens = length;
}

std::vector<float> PagedDecoder::run(const std::vector<int>& tokens, int start_pos,
                                     bool all_rows) {
  const int n = static_cast<int>(tokens.size());
  if (n == 0) throw InvalidArgument("PagedDecoder::forward: no tokens");
  if (start_pos < 0 || start_pos > length()) {
    throw InvalidArgument("PagedDecoder::forward: start_pos " + std::to_string(start_pos) +
                          " is outside [0, " + std::to_string(length()) + "] (the cached prefix)");
  }
  if (start_pos + n > max_seq_len()) {
    throw InvalidArgument("PagedDecoder::forward: positions up to " +
                          std::to_string(start_pos + n - 1) + " do not fit max_seq_len " +
                          std::to_string(max_seq_len()));
  }
  if (start_pos < length()) truncate(start_pos);

  Sequence next = seq_;
  next.token_ids.insert(next.token_ids.end(), tokens.begin(), tokens.end());
  int first = start_pos;  // first row to compute
  std::vector<BlockCopy> copies;  // copy-on-write of a shared last block, done by the pass
  if (!manager_->contains(seq_.seq_id)) {
    const int cached = manager_->allocate(next);  // start_pos == 0 here
    if (cached > 0 && all_rows) {
      manager_->free(seq_.seq_id);
      throw InvalidArgument("PagedDecoder::forward_all: " + std::to_string(cached) +
                            " prompt tokens are in the prefix cache, so their logits would not "
                            "be computed; use forward() or a manager without prefix caching");
    }
    first = cached;
    rows_cached_ += cached;
  } else {
    copies = manager_->append_slots(next, n);
  }
  seq_ = std::move(next);
  seq_.num_computed_tokens = seq_.num_tokens();

  // The rows to compute, in chunks the runner's buffers hold.
  const int end = start_pos + n;
  int step = runner_->options().max_tokens_per_step;
  if (all_rows) step = std::min(step, runner_->options().max_logit_rows);
  std::vector<float> logits;
  for (int begin = first; begin < end; begin += step) {
    const int stop = std::min(end, begin + step);
    std::vector<int> part(seq_.token_ids.begin() + begin, seq_.token_ids.begin() + stop);
    ForwardBatch batch =
        ForwardBatch::single(seq_.seq_id, part, begin, all_rows ? LogitRows::kAll : LogitRows::kLast,
                             &manager_->block_table(seq_.seq_id));
    batch.block_copies = std::move(copies);  // the first pass performs them
    if (!all_rows && stop != end) batch.logit_rows.clear();  // only the last row is needed
    std::vector<float> out = runner_->forward(batch, *cache_);
    logits.insert(logits.end(), out.begin(), out.end());
    rows_computed_ += stop - begin;
  }
  return logits;
}

int PagedDecoder::vocab_size() const { return runner_->vocab_size(); }

std::string PagedDecoder::name() const {
  return label_.empty() ? runner_->model().config().name : label_;
}

std::string PagedDecoder::device_name() const {
  return engine::device_name() + " · kernels, " + dtype_name(runner_->model().dtype()) +
         " weights, paged KV (block " + std::to_string(manager_->block_size()) + ")";
}

}  // namespace nanoserve::engine
