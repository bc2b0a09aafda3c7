#pragma once
/// \file
/// \brief `ByteTokenizer`: one token per byte, for synthetic models that have no vocabulary of
/// their own. Ids follow the llama2.c byte-fallback layout so any vocabulary of at least 259
/// entries can use it:
///
///     0 <unk>   1 <s> (BOS)   2 </s> (EOS)   3 + b  the byte b (0..255)   259.. unused
///
/// A synthetic model's text is meaningless; this tokenizer only makes it printable.

#include "common/tokenizer/tokenizer.h"

namespace nanoserve {

/// \brief Bytes as tokens (id = 3 + byte); ids above 258 decode to nothing.
class ByteTokenizer final : public Tokenizer {
 public:
  /// \brief A tokenizer for a model with `vocab_size` ids; throws InvalidArgument if < 259.
  explicit ByteTokenizer(int vocab_size);
  /// \brief One id per byte of `text` (3 + byte), optionally wrapped in BOS/EOS.
  std::vector<int> encode(std::string_view text, bool add_bos, bool add_eos) const override;
  /// \brief The byte of a byte id; "" for specials and unused ids; throws outside the vocab.
  std::string decode_token(int prev_token, int token) const override;
  /// \brief The model's vocabulary size.
  int vocab_size() const override { return vocab_size_; }
  /// \brief 1.
  int bos_id() const override { return 1; }
  /// \brief 2.
  int eos_id() const override { return 2; }

 private:
  int vocab_size_;
};

}  // namespace nanoserve
