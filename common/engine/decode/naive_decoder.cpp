#include "common/engine/decode/naive_decoder.h"

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
/// Runs `tokens` at `start_pos ..` of `region` in chunks of at most max_tokens_per_step rows;
/// returns the logits of the last row (which == kLast) or of every row (kAll).
std::vector<float> run_chunked(ModelRunner& runner, NaiveKVCache& cache, int region,
                               const std::vector<int>& tokens, int start_pos, LogitRows which) {
  const int n = static_cast<int>(tokens.size());
  // Refuse what cannot fit before the first chunk runs, so a refused call changes nothing.
  cache.regions().check_write(region, start_pos, n);
  int step = runner.options().max_tokens_per_step;
  if (which == LogitRows::kAll) step = std::min(step, runner.options().max_logit_rows);
  std::vector<float> logits;
  for (int begin = 0; begin < n; begin += step) {
    const int end = std::min(n, begin + step);
    const bool last_chunk = end == n;
    std::vector<int> part(tokens.begin() + begin, tokens.begin() + end);
    ForwardBatch batch = ForwardBatch::single(region, std::move(part), start_pos + begin, which);
    if (which == LogitRows::kLast && !last_chunk) batch.logit_rows.clear();  // only the end
    std::vector<float> out = runner.forward(batch, cache);
    logits.insert(logits.end(), out.begin(), out.end());
  }
  return logits;
}

}  // namespace

RunnerOptions NaiveDecoder::runner_options(const ModelConfig& config, int max_seq_len,
                                           std::optional<DType> activation_dtype,
                                           bool cuda_graphs) {
  RunnerOptions o;
  o.activation_dtype = activation_dtype;
  o.cuda_graphs = cuda_graphs;
  const int context = max_seq_len == 0 ? config.max_seq_len : max_seq_len;
  o.max_tokens_per_step = std::min(context, 512);  // longer prefixes run in chunks
  o.max_logit_rows = 1;
  return o;
}

NaiveDecoder::NaiveDecoder(const DeviceModel& model, CacheMode mode, int max_seq_len,
                           std::optional<DType> activation_dtype, std::optional<DType> kv_dtype,
                           bool cuda_graphs)
    : owned_cache_(std::make_unique<NaiveKVCache>(
          model.config(), kv_dtype.value_or(activation_dtype.value_or(model.dtype())),
          max_seq_len, 1)),
      owned_runner_(std::make_unique<ModelRunner>(
          model, runner_options(model.config(), max_seq_len, activation_dtype, cuda_graphs))),
      runner_(owned_runner_.get()),
      cache_(owned_cache_.get()),
      mode_(mode),
      region_(cache_->allocate()) {}

NaiveDecoder::NaiveDecoder(ModelRunner& runner, NaiveKVCache& cache, CacheMode mode)
    : runner_(&runner), cache_(&cache), mode_(mode), region_(cache.allocate()) {}

NaiveDecoder::~NaiveDecoder() { cache_->free(region_); }

void NaiveDecoder::reset() {
  cache_->truncate(region_, 0);
  history_.clear();
}

std::vector<float> NaiveDecoder::forward(const std::vector<int>& tokens, int start_pos) {
  if (tokens.empty()) throw InvalidArgument("NaiveDecoder::forward: no tokens");
  if (mode_ == CacheMode::kNaiveCache) {
    rows_computed_ += static_cast<std::int64_t>(tokens.size());
    return run_chunked(*runner_, *cache_, region_, tokens, start_pos, LogitRows::kLast);
  }
  // No cache: the sequence is kept as tokens only, and every call recomputes all of it.
  if (start_pos < 0 || start_pos > static_cast<int>(history_.size())) {
    throw InvalidArgument("NaiveDecoder::forward: start_pos " + std::to_string(start_pos) +
                          " is outside [0, " + std::to_string(history_.size()) +
                          "] (the sequence so far)");
  }
  history_.resize(static_cast<std::size_t>(start_pos));
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  rows_computed_ += static_cast<std::int64_t>(history_.size());
  cache_->truncate(region_, 0);  // nothing is reused: the pass rewrites every position
  return run_chunked(*runner_, *cache_, region_, history_, 0, LogitRows::kLast);
}

int NaiveDecoder::vocab_size() const { return runner_->vocab_size(); }

std::string NaiveDecoder::device_name() const {
  return engine::device_name() + " · kernels, " + runner_->model().weight_format() +
         " weights, " + to_string(mode_);
}

eval::LogitsFn kernel_logits(ModelRunner& runner, NaiveKVCache& cache) {
  return [&runner, &cache](const std::vector<int>& tokens) {
    const int region = cache.allocate();
    try {
      std::vector<float> logits = run_chunked(runner, cache, region, tokens, 0, LogitRows::kAll);
      cache.free(region);
      return logits;
    } catch (...) {
      cache.free(region);
      throw;
    }
  };
}

}  // namespace nanoserve::engine
