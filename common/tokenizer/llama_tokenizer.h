#pragma once
/// \file
/// \brief `LlamaTokenizer`: the SentencePiece-style vocabulary with scores that Llama-2 and the
/// llama2.c models use, encoded with llama2.c's algorithm (`run.c`, `encode`/`decode`).
///
/// One class serves two file formats: llama2.c's `tokenizer.bin` (`load_llama2c_tokenizer`)
/// and the vocabulary embedded in GGUF metadata (`make_gguf_llama_tokenizer`, fed by the GGUF
/// parser). Both describe the same thing — piece strings, one score per piece, and the
/// special ids — so they build the same `LlamaVocab`.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/gguf_token_type.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve {

/// \brief A score-based vocabulary, as llama2.c stores it: pieces use a plain space where
/// SentencePiece writes "▁" (U+2581); ids 3..258 are normally the byte pieces `<0x00>`..`<0xFF>`.
struct LlamaVocab {
  std::vector<std::string> pieces;  ///< (vocab_size) the text of each token
  std::vector<float> scores;        ///< (vocab_size) merge priority: higher merges first
  /// (vocab_size) whether encoding may produce the token from text; empty means every token
  /// (llama2.c). GGUF marks control, unknown, unused and byte tokens as not matchable.
  std::vector<bool> matchable;
  int bos_id = 1;  ///< beginning of sequence (llama2.c hard-codes 1)
  int eos_id = 2;  ///< end of sequence (llama2.c hard-codes 2)
  int unk_id = 0;  ///< unknown: used only for a byte that has no `<0xXX>` piece
};

/// \brief Text <-> ids with llama2.c's algorithm over a `LlamaVocab`.
///
/// Encoding (identical ids to llama2.c `run.c` `encode` on its vocabularies):
/// 1. non-empty text gets a dummy-prefix space token (SentencePiece's `add_dummy_prefix`);
/// 2. the text is cut into UTF-8 code points (a lead byte plus at most 3 continuation bytes,
///    exactly as `run.c` groups them, valid or not); each is looked up as a piece, and one that
///    is missing becomes its bytes' `<0xXX>` tokens (byte fallback);
/// 3. adjacent tokens whose concatenated pieces form a piece are merged, highest score first,
///    leftmost on ties, until nothing merges (`merge_adjacent_pairs`, O(n log n) instead of
///    `run.c`'s O(n²)); like `run.c`, a merge whose score is ≤ −1e10 never happens.
///
/// Where this differs from `run.c`, on inputs the real vocabularies never produce: pieces are
/// found with a hash map instead of a sorted array and binary search (the first id wins if a
/// piece appears twice; `run.c` would pick any); BOS/EOS are added after merging (`run.c`
/// would let a pair (BOS, x) merge if `"<s>"+x` were a piece); a byte is found through its
/// `<0xXX>` piece rather than as id byte+3, and becomes `unk_id` if that piece is missing; a
/// missing `" "` piece makes the dummy prefix a byte token instead of id −1.
///
/// Not SentencePiece itself: SentencePiece (with `remove_extra_whitespaces`, the default that
/// tok512.model uses) first drops leading/trailing spaces and collapses runs of spaces, and
/// llama2.c does not. The tests pin this difference down.
class LlamaTokenizer final : public Tokenizer {
 public:
  /// \brief Takes a vocabulary that the caller has validated (non-empty, equal lengths,
  /// special ids in range); throws `InvalidArgument` if it is not.
  explicit LlamaTokenizer(LlamaVocab vocab);

  /// \brief llama2.c `encode`, see the class comment. Never throws for any byte string.
  std::vector<int> encode(std::string_view text, bool add_bos, bool add_eos) const override;
  /// \brief llama2.c `decode`: after BOS a leading space is dropped; `<0xXX>` becomes that
  /// raw byte. `InvalidArgument` for an id outside [0, vocab_size).
  std::string decode_token(int prev_token, int token) const override;

  /// \brief Number of pieces.
  int vocab_size() const override { return static_cast<int>(vocab_.pieces.size()); }
  /// \brief Beginning-of-sequence id.
  int bos_id() const override { return vocab_.bos_id; }
  /// \brief End-of-sequence id.
  int eos_id() const override { return vocab_.eos_id; }
  /// \brief Unknown-token id.
  int unk_id() const { return vocab_.unk_id; }
  /// \brief The piece text of `id` (a space, not "▁"); `InvalidArgument` when out of range.
  const std::string& piece(int id) const;
  /// \brief The score of `id`; `InvalidArgument` when out of range.
  float score(int id) const;
  /// \brief The id of a matchable piece, or −1.
  int find_piece(const std::string& piece) const;

 private:
  void check_id(int id) const;

  LlamaVocab vocab_;
  std::unordered_map<std::string, int> piece_to_id_;  // matchable pieces only
  std::array<int, 256> byte_to_id_{};                 // id of "<0xXX>", else unk_id
  int space_id_ = -1;            // the dummy prefix " ", or −1
};

/// \brief Reads a llama2.c `tokenizer.bin`: `int32 max_token_length`, then per token
/// `float32 score, int32 len, len bytes`, little-endian, with no count in the file: the count
/// is the model's vocab_size. Ids 0/1/2 are unk/BOS/EOS.
///
/// \param path                the tokenizer file
/// \param expected_vocab_size the model's vocab_size (the file must hold exactly that many
///        tokens), or 0 to take every token the file holds
/// \throws LoadError naming the file and field (`max_token_length`, `token[i].len`, …) for a
///         truncated file, negative or absurd lengths, a length above max_token_length, a
///         non-finite score, or a token count other than `expected_vocab_size`.
std::unique_ptr<LlamaTokenizer> load_llama2c_tokenizer(const std::string& path,
                                                       int expected_vocab_size);

/// \brief `load_llama2c_tokenizer` on bytes already in memory; `name` is used in messages
/// (the fuzz target calls this).
std::unique_ptr<LlamaTokenizer> parse_llama2c_tokenizer(const uint8_t* data, size_t size,
                                                        int expected_vocab_size,
                                                        const std::string& name);

/// \brief Builds a `LlamaTokenizer` from the vocabulary in GGUF metadata
/// (`tokenizer.ggml.model == "llama"`): `tokenizer.ggml.tokens`, `.scores`, `.token_type`,
/// `.bos_token_id`, `.eos_token_id`, `.unknown_token_id`.
///
/// Pieces are converted to llama2.c's convention ("▁" → " "), so the GGUF copy of a vocabulary
/// encodes exactly like its `tokenizer.bin` export. Control, unknown, unused and byte tokens
/// are never produced from text (text "<s>" is not BOS).
///
/// \param file        the GGUF path, for messages
/// \param tokens      (n) `tokenizer.ggml.tokens`, SentencePiece pieces with "▁"
/// \param scores      (n) `tokenizer.ggml.scores`
/// \param token_types empty (all normal) or (n) `tokenizer.ggml.token_type` values
/// \param bos_id      `tokenizer.ggml.bos_token_id`
/// \param eos_id      `tokenizer.ggml.eos_token_id`
/// \param unk_id      `tokenizer.ggml.unknown_token_id`
/// \throws LoadError naming `file` and the metadata key when the arrays disagree in length,
///         a special id is outside the vocabulary, a score is not finite, a token type is
///         unknown, or a user-defined token is present.
std::unique_ptr<LlamaTokenizer> make_gguf_llama_tokenizer(const std::string& file,
                                                          std::vector<std::string> tokens,
                                                          std::vector<float> scores,
                                                          const std::vector<int32_t>& token_types,
                                                          int64_t bos_id, int64_t eos_id,
                                                          int64_t unk_id);

}  // namespace nanoserve
