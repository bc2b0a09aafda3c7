#pragma once
/// \file
/// \brief The `Tokenizer` interface every vocabulary format implements (llama2.c
/// `tokenizer.bin`, the SentencePiece-style vocabulary inside GGUF, Hugging Face
/// `tokenizer.json` BPE).

#include <string>
#include <string_view>
#include <vector>

namespace nanoserve {

/// \brief Text <-> token ids.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// \brief Encodes UTF-8 text; optionally prepends BOS and appends EOS.
  virtual std::vector<int> encode(std::string_view text, bool add_bos, bool add_eos) const = 0;

  /// \brief The text of `token` when it follows `prev_token` (llama2.c's `decode`: a leading
  /// space is dropped right after BOS, byte tokens become raw bytes). Throws `InvalidArgument`
  /// for ids outside the vocabulary.
  virtual std::string decode_token(int prev_token, int token) const = 0;

  /// \brief Decodes a whole sequence (BOS/EOS produce no text). The exact inverse of
  /// `encode(text, …)` wherever the format allows.
  virtual std::string decode(const std::vector<int>& tokens) const;

  /// \brief Number of token ids.
  virtual int vocab_size() const = 0;
  /// \brief Beginning-of-sequence id.
  virtual int bos_id() const = 0;
  /// \brief End-of-sequence id.
  virtual int eos_id() const = 0;
};

}  // namespace nanoserve
