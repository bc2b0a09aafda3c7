#include "common/engine/kv/kv_memory.h"

#include "common/error.h"

namespace nanoserve::engine {

KvMemoryEstimate estimate_kv_memory(const ModelConfig& config, int bytes_per_element, int context,
                                    int batch) {
  if (bytes_per_element < 1 || context < 1 || batch < 1) {
    throw InvalidArgument("estimate_kv_memory: bytes_per_element = " +
                          std::to_string(bytes_per_element) + ", context = " +
                          std::to_string(context) + " and batch = " + std::to_string(batch) +
                          " must all be >= 1");
  }
  KvMemoryEstimate e;
  e.model = config.name;
  e.bytes_per_element = bytes_per_element;
  e.context = context;
  e.batch = batch;
  e.bytes_per_token = config.kv_bytes_per_token(bytes_per_element);
  e.bytes_per_request = e.bytes_per_token * context;
  e.bytes_per_batch = e.bytes_per_request * batch;
  e.bytes_per_token_without_gqa = std::int64_t(2) * config.n_layers * config.dim * bytes_per_element;
  return e;
}

std::vector<std::string> kv_memory_reference_models() {
  return {"llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b"};
}

int checked_cache_context(const ModelConfig& config, int max_seq_len, const char* cache) {
  const int len = max_seq_len == 0 ? config.max_seq_len : max_seq_len;
  if (len < 1 || len > config.max_seq_len) {
    throw InvalidArgument(std::string(cache) + ": max_seq_len = " + std::to_string(max_seq_len) +
                          " is outside [1, " + std::to_string(config.max_seq_len) +
                          "] (the context of model '" + config.name + "')");
  }
  return len;
}

}  // namespace nanoserve::engine
