#pragma once
/// \file
/// \brief The CPU oracle as a `Decoder`: `nanoserve generate --device cpu`, and the
/// reference every kernel-based decoder is compared with.

#include "common/generation/generate.h"
#include "common/model.h"
#include "common/oracle/kv_store.h"

namespace nanoserve::oracle {

/// \brief Runs `oracle::forward_prompt` over a contiguous `KVStore` of `capacity` positions.
class OracleDecoder final : public Decoder {
 public:
  /// \brief Keeps a reference to `model` (which must outlive the decoder) and holds up to
  /// `capacity` positions (0 = the model's context). Size it by the run — prompt plus new
  /// tokens — rather than by the context a file claims (2^20 positions of a small model are
  /// gigabytes). Throws `InvalidArgument` for a capacity outside [0, context].
  explicit OracleDecoder(const Model& model, int capacity = 0);
  /// \brief Empties the KV store.
  void reset() override;
  /// \brief Logits (vocab) after `tokens` placed at `start_pos ..`.
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override;
  /// \brief The model's vocabulary size.
  int vocab_size() const override { return model_.config.vocab_size; }
  /// \brief The positions the backend holds (its capacity).
  int max_seq_len() const override { return kv_.capacity(); }
  /// \brief "CPU oracle (Eigen, fp32)".
  std::string device_name() const override { return "CPU oracle (Eigen, fp32)"; }

 private:
  const Model& model_;
  KVStore kv_;
};

}  // namespace nanoserve::oracle
