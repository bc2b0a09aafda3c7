#pragma once
/// \file
/// \brief `RollbackDecoder`: a `Decoder` that speculative decoding can use — it returns
/// the logits of *every* position it processed (the verifier needs γ+1 of them from one
/// forward) and can forget the tail of its KV cache (rejected draft tokens).
///
///     KV positions:   0 ........ L-1 | L ... L+γ-1        after a verify over γ drafts
///                     accepted       | drafts
///     truncate(L+n):  0 ........ L+n-1                     n drafts accepted, the rest forgotten
///
/// The oracle implements it here (`OracleRollbackDecoder`, a `KVStore` whose `set_length`
/// rolls back). Through the kernels, `engine::PagedDecoder`
/// (`common/engine/decode/paged_decoder.h`) implements it over paged KV: `forward_all` sends
/// the rows as one chunk, and `truncate` is `KVCacheManager::rollback`, which forgets the
/// slots past the new length and returns blocks left empty to the pool.

#include <string>
#include <vector>

#include "common/generation/generate.h"
#include "common/model.h"
#include "common/oracle/kv_store.h"

namespace nanoserve::speculative {

/// \brief A `Decoder` with all-position logits and KV rollback, for one sequence.
class RollbackDecoder : public Decoder {
 public:
  /// \brief Processes `tokens` at positions `start_pos .. start_pos + T - 1` (`start_pos` must
  /// be <= `length()`; positions from `start_pos` on are overwritten) and returns the logits of
  /// every row, (T, vocab) row-major: row t predicts the token after `tokens[t]`.
  /// Afterwards `length() == start_pos + T`.
  virtual std::vector<float> forward_all(const std::vector<int>& tokens, int start_pos) = 0;
  /// \brief Forgets the KV of positions `length .. length()-1`. Throws `InvalidArgument` unless
  /// `0 <= length <= length()`.
  virtual void truncate(int length) = 0;
  /// \brief Positions whose keys and values are cached (`0 .. length()-1`).
  virtual int length() const = 0;
  /// \brief A short name for reports (e.g. the model's name).
  virtual std::string name() const = 0;

  /// \brief The last row of `forward_all` (the `Decoder` contract).
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override;
};

/// \brief The CPU oracle (`oracle::forward_prompt` over a contiguous `KVStore`) as a
/// `RollbackDecoder`; rollback is `KVStore::set_length`.
class OracleRollbackDecoder final : public RollbackDecoder {
 public:
  /// \brief Keeps a reference to `model` (which must outlive the decoder and have passed
  /// `Model::validate()`); the KV store holds `capacity` positions (0 = the model's context).
  explicit OracleRollbackDecoder(const Model& model, int capacity = 0);
  /// \brief Empties the KV store.
  void reset() override { kv_.set_length(0); }
  /// \brief `oracle::forward_prompt(model, kv, tokens, start_pos)`: (T, vocab) logits.
  std::vector<float> forward_all(const std::vector<int>& tokens, int start_pos) override;
  /// \brief `KVStore::set_length(length)` after checking `length <= length()`.
  void truncate(int length) override;
  /// \brief `KVStore::length()`.
  int length() const override { return kv_.length(); }
  /// \brief The model's vocabulary size.
  int vocab_size() const override { return model_.config.vocab_size; }
  /// \brief The KV store's capacity.
  int max_seq_len() const override { return kv_.capacity(); }
  /// \brief "CPU oracle (Eigen, fp32)".
  std::string device_name() const override { return "CPU oracle (Eigen, fp32)"; }
  /// \brief The model's `config.name`.
  std::string name() const override { return model_.config.name; }
  /// \brief The KV store, read-only (tests compare it with plain decoding's).
  const oracle::KVStore& kv() const { return kv_; }

 private:
  const Model& model_;
  oracle::KVStore kv_;
};

}  // namespace nanoserve::speculative
