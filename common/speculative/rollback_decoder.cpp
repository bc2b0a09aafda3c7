#include "common/speculative/rollback_decoder.h"

#include <string>

#include "common/error.h"
#include "common/oracle/forward.h"

namespace nanoserve::speculative {

std::vector<float> RollbackDecoder::forward(const std::vector<int>& tokens, int start_pos) {
  std::vector<float> all = forward_all(tokens, start_pos);  // (T, vocab)
  const auto vocab = static_cast<std::ptrdiff_t>(vocab_size());
  return std::vector<float>(all.end() - vocab, all.end());
}

OracleRollbackDecoder::OracleRollbackDecoder(const Model& model, int capacity)
    : model_(model), kv_(model.config, capacity) {}

std::vector<float> OracleRollbackDecoder::forward_all(const std::vector<int>& tokens,
                                                      int start_pos) {
  return oracle::forward_prompt(model_, kv_, tokens, start_pos);
}

void OracleRollbackDecoder::truncate(int length) {
  if (length < 0 || length > kv_.length()) {
    throw InvalidArgument("RollbackDecoder::truncate('" + name() + "'): length " +
                          std::to_string(length) + " is outside [0, cached length " +
                          std::to_string(kv_.length()) + "]");
  }
  kv_.set_length(length);
}

}  // namespace nanoserve::speculative
