#include "common/oracle/oracle_decoder.h"

#include "common/oracle/forward.h"

namespace nanoserve::oracle {

OracleDecoder::OracleDecoder(const Model& model, int capacity)
    : model_(model), kv_(model.config, capacity) {}

void OracleDecoder::reset() { kv_.set_length(0); }

std::vector<float> OracleDecoder::forward(const std::vector<int>& tokens, int start_pos) {
  std::vector<float> all = forward_prompt(model_, kv_, tokens, start_pos);
  const size_t vocab = static_cast<size_t>(model_.config.vocab_size);
  return std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(vocab), all.end());
}

}  // namespace nanoserve::oracle
