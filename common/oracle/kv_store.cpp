#include "common/oracle/kv_store.h"

#include <string>

#include "common/error.h"

namespace nanoserve::oracle {

KVStore::KVStore(const ModelConfig& config, int capacity)
    : n_layers_(config.n_layers),
      capacity_(capacity == 0 ? config.max_seq_len : capacity),
      kv_dim_(config.kv_dim()) {
  if (capacity < 0 || capacity_ > config.max_seq_len || capacity_ <= 0) {
    throw InvalidArgument("KVStore: capacity " + std::to_string(capacity) +
                          " is outside [1, max_seq_len=" + std::to_string(config.max_seq_len) +
                          "] (0 means max_seq_len)");
  }
  const size_t n = size_t(n_layers_) * size_t(capacity_) * size_t(kv_dim_);
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

void KVStore::set_length(int n) {
  if (n < 0 || n > capacity_) {
    throw InvalidArgument("KVStore::set_length: " + std::to_string(n) + " is outside [0, " +
                          std::to_string(capacity_) + "]");
  }
  length_ = n;
}

}  // namespace nanoserve::oracle
