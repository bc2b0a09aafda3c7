#pragma once
/// \file
/// \brief `KVStore`: the oracle's plain contiguous key/value cache (llama2.c's
/// `key_cache`/`value_cache`), one slot per position from 0 up to a fixed capacity.
///
///     k, v: (n_layers, capacity, kv_dim)      kv_dim = n_kv_heads * head_dim
///
///     layer 0 | pos 0 | pos 1 | ... | pos length-1 | (unused) ... | pos capacity-1 |
///     layer 1 | pos 0 | ...
///
/// It is deliberately the simplest cache there is — the thing chapter 1 starts from and every
/// cleverer cache (paged, quantized) is checked against.

#include <cstdint>
#include <vector>

#include "common/model_config.h"

namespace nanoserve::oracle {

/// \brief Keys and values of positions `0 .. length()-1` for every layer.
class KVStore {
 public:
  /// \brief An empty store for `config` with room for `capacity` positions
  /// (0 = `config.max_seq_len`). Throws `InvalidArgument` if capacity is negative or exceeds
  /// `config.max_seq_len`.
  explicit KVStore(const ModelConfig& config, int capacity = 0);

  /// \brief Number of layers.
  int n_layers() const { return n_layers_; }
  /// \brief Positions it can hold.
  int capacity() const { return capacity_; }
  /// \brief Floats per position per layer (`n_kv_heads * head_dim`).
  int kv_dim() const { return kv_dim_; }
  /// \brief Positions `0 .. length()-1` hold valid keys and values.
  int length() const { return length_; }
  /// \brief Declares positions `0 .. n-1` valid and forgets the rest (the forward pass sets it;
  /// a caller may shrink it to roll back, e.g. rejected speculative tokens).
  /// Throws `InvalidArgument` unless `0 <= n <= capacity()`.
  void set_length(int n);

  /// \brief Keys of `layer`: (capacity, kv_dim), row j = position j.
  float* k(int layer) { return k_.data() + layer_offset(layer); }
  /// \brief Values of `layer`: (capacity, kv_dim), row j = position j.
  float* v(int layer) { return v_.data() + layer_offset(layer); }
  /// \brief Read-only keys of `layer`: (capacity, kv_dim).
  const float* k(int layer) const { return k_.data() + layer_offset(layer); }
  /// \brief Read-only values of `layer`: (capacity, kv_dim).
  const float* v(int layer) const { return v_.data() + layer_offset(layer); }

  /// \brief Bytes held by keys and values together.
  int64_t bytes() const { return int64_t(k_.size() + v_.size()) * int64_t(sizeof(float)); }

 private:
  int64_t layer_offset(int layer) const { return int64_t(layer) * capacity_ * kv_dim_; }

  int n_layers_ = 0;
  int capacity_ = 0;
  int kv_dim_ = 0;
  int length_ = 0;
  std::vector<float> k_;  // (n_layers, capacity, kv_dim)
  std::vector<float> v_;  // (n_layers, capacity, kv_dim)
};

}  // namespace nanoserve::oracle
