#pragma once
/// \file
/// \brief Tiny fake tokenizers for the evaluation tests: their token counts are known by
/// construction, which is what the perplexity and bits-per-byte formulas are checked against.

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::testing {

/// \brief One token per byte: ids 0..255 are bytes, 256 BOS, 257 EOS (vocab 258).
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int> encode(std::string_view text, bool add_bos, bool add_eos) const override {
    std::vector<int> ids;
    if (add_bos) ids.push_back(bos_id());
    for (unsigned char c : text) ids.push_back(c);
    if (add_eos) ids.push_back(eos_id());
    return ids;
  }
  std::string decode_token(int, int token) const override {
    if (token < 0 || token >= 256) throw InvalidArgument("ByteTokenizer: bad id");
    return std::string(1, char(token));
  }
  int vocab_size() const override { return 258; }
  int bos_id() const override { return 256; }
  int eos_id() const override { return 257; }
};

/// \brief One token per two bytes (a trailing odd byte is a token too), ids 2..201 by a hash of
/// the pair; BOS 0, EOS 1 (vocab 202). Not invertible — evaluation never decodes.
class PairTokenizer : public Tokenizer {
 public:
  std::vector<int> encode(std::string_view text, bool add_bos, bool add_eos) const override {
    std::vector<int> ids;
    if (add_bos) ids.push_back(bos_id());
    for (size_t i = 0; i < text.size(); i += 2) {
      const unsigned a = (unsigned char)text[i];
      const unsigned b = i + 1 < text.size() ? (unsigned char)text[i + 1] : 0u;
      ids.push_back(int((a * 31 + b) % 200) + 2);
    }
    if (add_eos) ids.push_back(eos_id());
    return ids;
  }
  std::string decode_token(int, int) const override { return "?"; }
  int vocab_size() const override { return 202; }
  int bos_id() const override { return 0; }
  int eos_id() const override { return 1; }
};

/// \brief Letters 'a'..'e' are ids 3..7; BOS 1, EOS 2, id 0 unused (vocab 8).
class LetterTokenizer : public Tokenizer {
 public:
  std::vector<int> encode(std::string_view text, bool add_bos, bool add_eos) const override {
    std::vector<int> ids;
    if (add_bos) ids.push_back(bos_id());
    for (char c : text) {
      if (c < 'a' || c > 'e') throw InvalidArgument("LetterTokenizer: not a..e");
      ids.push_back(c - 'a' + 3);
    }
    if (add_eos) ids.push_back(eos_id());
    return ids;
  }
  std::string decode_token(int, int token) const override {
    return std::string(1, char('a' + token - 3));
  }
  int vocab_size() const override { return 8; }
  int bos_id() const override { return 1; }
  int eos_id() const override { return 2; }
};

}  // namespace nanoserve::testing
