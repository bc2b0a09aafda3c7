#include "common/engine/decode/kernel_backend.h"

#include <algorithm>

#include "common/engine/model/device_info.h"
#include "common/error.h"

namespace nanoserve::engine {

const char* to_string(CacheMode mode) {
  return mode == CacheMode::kNoCache ? "no-cache" : "naive-cache";
}

CacheMode parse_cache_mode(const std::string& name) {
  if (name == "no-cache") return CacheMode::kNoCache;
  if (name == "naive-cache") return CacheMode::kNaiveCache;
  throw InvalidArgument("cache mode '" + name + "' is not one of: no-cache, naive-cache");
}

namespace {
/// Runs `tokens` at `start_pos ..` of `slot` in chunks of at most max_tokens_per_step rows;
/// returns the logits of the last row (which == kLast) or of every row (kAll).
std::vector<float> run_chunked(ModelRunner& runner, NaiveKVCache& cache, int slot,
                               const std::vector<int>& tokens, int start_pos, LogitRows which) {
  const int n = static_cast<int>(tokens.size());
  // Refuse what cannot fit before the first chunk runs, so a refused call changes nothing.
  cache.slots().check_write(slot, start_pos, n);
  int step = runner.options().max_tokens_per_step;
  if (which == LogitRows::kAll) step = std::min(step, runner.options().max_logit_rows);
  std::vector<float> logits;
  for (int begin = 0; begin < n; begin += step) {
    const int end = std::min(n, begin + step);
    const bool last_chunk = end == n;
    std::vector<int> part(tokens.begin() + begin, tokens.begin() + end);
    ForwardBatch batch = ForwardBatch::single(slot, std::move(part), start_pos + begin, which);
    if (which == LogitRows::kLast && !last_chunk) batch.logit_rows.clear();  // only the end
    std::vector<float> out = runner.forward(batch, cache);
    logits.insert(logits.end(), out.begin(), out.end());
  }
  return logits;
}

RunnerOptions options_for(const DeviceModel& model, int max_seq_len) {
  RunnerOptions o;
  const int context = max_seq_len == 0 ? model.config().max_seq_len : max_seq_len;
  o.max_tokens_per_step = std::min(context, 512);  // longer prefixes run in chunks
  o.max_logit_rows = 1;
  return o;
}
}  // namespace

KernelBackend::KernelBackend(const DeviceModel& model, CacheMode mode, int max_seq_len)
    : owned_cache_(std::make_unique<NaiveKVCache>(model.config(), model.dtype(), max_seq_len, 1)),
      owned_runner_(std::make_unique<ModelRunner>(model, options_for(model, max_seq_len))),
      runner_(owned_runner_.get()),
      cache_(owned_cache_.get()),
      mode_(mode),
      slot_(cache_->allocate()) {}

KernelBackend::KernelBackend(ModelRunner& runner, NaiveKVCache& cache, CacheMode mode)
    : runner_(&runner), cache_(&cache), mode_(mode), slot_(cache.allocate()) {}

KernelBackend::~KernelBackend() { cache_->free(slot_); }

void KernelBackend::reset() {
  cache_->truncate(slot_, 0);
  history_.clear();
}

std::vector<float> KernelBackend::forward(const std::vector<int>& tokens, int start_pos) {
  if (tokens.empty()) throw InvalidArgument("KernelBackend::forward: no tokens");
  if (mode_ == CacheMode::kNaiveCache) {
    rows_computed_ += static_cast<std::int64_t>(tokens.size());
    return run_chunked(*runner_, *cache_, slot_, tokens, start_pos, LogitRows::kLast);
  }
  // No cache: the sequence is kept as tokens only, and every call recomputes all of it.
  if (start_pos < 0 || start_pos > static_cast<int>(history_.size())) {
    throw InvalidArgument("KernelBackend::forward: start_pos " + std::to_string(start_pos) +
                          " is outside [0, " + std::to_string(history_.size()) +
                          "] (the sequence so far)");
  }
  history_.resize(static_cast<std::size_t>(start_pos));
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  rows_computed_ += static_cast<std::int64_t>(history_.size());
  cache_->truncate(slot_, 0);  // nothing is reused: the pass rewrites every position
  return run_chunked(*runner_, *cache_, slot_, history_, 0, LogitRows::kLast);
}

int KernelBackend::vocab_size() const { return runner_->model().config().vocab_size; }

std::string KernelBackend::device_name() const {
  return engine::device_name() + " · kernels, " + runner_->model().weight_format() +
         " weights, " + to_string(mode_);
}

eval::LogitsFn kernel_logits(ModelRunner& runner, NaiveKVCache& cache) {
  return [&runner, &cache](const std::vector<int>& tokens) {
    const int slot = cache.allocate();
    try {
      std::vector<float> logits = run_chunked(runner, cache, slot, tokens, 0, LogitRows::kAll);
      cache.free(slot);
      return logits;
    } catch (...) {
      cache.free(slot);
      throw;
    }
  };
}

}  // namespace nanoserve::engine
