#include "common/engine/decode/spec_paged_model.h"

#include <utility>

#include "common/error.h"

namespace nanoserve::engine {

namespace {

constexpr std::int64_t kSeqId = 0;

int checked_max_seq_len(const DeviceModel& model, const SpecPagedOptions& o) {
  const int context = model.config().max_seq_len;
  const int n = o.max_seq_len == 0 ? context : o.max_seq_len;
  if (n < 1 || n > context) {
    throw InvalidArgument("SpecPagedModel('" + model.config().name + "'): max_seq_len " +
                          std::to_string(o.max_seq_len) + " is outside [1, " +
                          std::to_string(context) + "] (0 = the model's context)");
  }
  if (o.block_size < 1 || o.max_logit_rows < 1 || o.max_tokens_per_step < o.max_logit_rows) {
    throw InvalidArgument("SpecPagedModel: need block_size >= 1 and 1 <= max_logit_rows <= "
                          "max_tokens_per_step, got " + std::to_string(o.block_size) + ", " +
                          std::to_string(o.max_logit_rows) + ", " +
                          std::to_string(o.max_tokens_per_step));
  }
  return n;
}

}  // namespace

SpecPagedModel::SpecPagedModel(std::unique_ptr<DeviceModel> model, SpecPagedOptions options,
                               std::string label)
    : model_(std::move(model)), label_(std::move(label)) {
  if (!model_) throw InvalidArgument("SpecPagedModel: no model");
  const int max_seq_len = checked_max_seq_len(*model_, options);
  if (label_.empty()) label_ = model_->config().name;
  const int blocks = (max_seq_len + options.block_size - 1) / options.block_size + 1;
  runner_ = std::make_unique<ModelRunner>(
      *model_, RunnerOptions{options.max_tokens_per_step, options.max_logit_rows});
  manager_ = std::make_unique<KVCacheManager>(blocks, options.block_size,
                                              /*enable_prefix_caching=*/false);
  cache_ = std::make_unique<PagedKVCache>(model_->config(), model_->dtype(), *manager_,
                                          max_seq_len);
  backend_ = std::make_unique<PagedBackend>(*runner_, *manager_, *cache_, kSeqId);
}

}  // namespace nanoserve::engine
