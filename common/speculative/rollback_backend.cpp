#include "common/speculative/rollback_backend.h"

#include <string>

#include "common/error.h"
#include "common/oracle/forward.h"

namespace nanoserve::speculative {

std::vector<float> RollbackBackend::forward(const std::vector<int>& tokens, int start_pos) {
  std::vector<float> all = forward_all(tokens, start_pos);  // (T, vocab)
  const auto vocab = static_cast<std::ptrdiff_t>(vocab_size());
  return std::vector<float>(all.end() - vocab, all.end());
}

OracleRollbackBackend::OracleRollbackBackend(const Model& model, int capacity)
    : model_(model), kv_(model.config, capacity) {}

std::vector<float> OracleRollbackBackend::forward_all(const std::vector<int>& tokens,
                                                      int start_pos) {
  return oracle::forward_prompt(model_, kv_, tokens, start_pos);
}

void OracleRollbackBackend::truncate(int length) {
  if (length < 0 || length > kv_.length()) {
    throw InvalidArgument("RollbackBackend::truncate('" + name() + "'): length " +
                          std::to_string(length) + " is outside [0, cached length " +
                          std::to_string(kv_.length()) + "]");
  }
  kv_.set_length(length);
}

}  // namespace nanoserve::speculative
