#pragma once
/// \file
/// \brief `HfBpeTokenizer`: the Hugging Face `tokenizers` BPE model in the two configurations
/// real checkpoints use — SentencePiece-style (TinyStories-656K, TinyLlama, Llama 2, Mistral:
/// "▁" normalizer, byte fallback, no pre-tokenizer) and byte-level (GPT-2, SmolLM2, Llama 3,
/// Qwen2: regex pre-tokenizer, GPT-2 byte alphabet, ByteLevel decoder) — and the parser that
/// reads exactly that subset of the format.
///
/// Encoding pipeline, SentencePiece-style (what `tokenizers` does for this configuration):
/// ```
/// "Hi <|end_story|>"                         text
///  │ normalizer: Prepend "▁", Replace " "→"▁"
/// "▁Hi▁<|end_story|>"
///  │ added tokens, matched leftmost-longest on their *normalized* content ("▁<|end_story|>")
/// ["▁Hi"] [id 2]                              segments
///  │ BPE per segment: one token per character (unknown → <0xXX> bytes or a fused <unk>),
///  │ then merges lowest rank first, leftmost on ties, until none applies
/// [80 "▁", 1158 "Hi"] [2]
/// ```
/// There is no pre-tokenizer, so a whole segment is one BPE "word"; `merge_adjacent_pairs`
/// keeps that O(n log n) on long texts.
///
/// Byte-level (Llama 3):
/// ```
/// "<|begin_of_text|>Hi  42"                   text (invalid UTF-8 first becomes U+FFFD)
///  │ added tokens with normalized=false, matched in the raw text
/// [id 128000] "Hi  42"
///  │ normalizer (Qwen2: NFC), then added tokens with normalized=true
///  │ pre-tokenizer (pre_tokenizer.h)          ["Hi", " ", " ", "42"]
///  │ bytes → GPT-2 alphabet (byte_level.h)    ["Hi", "Ġ", "Ġ", "42"]
///  │ BPE per word (ignore_merges: a word in the vocabulary is one token)
/// ```

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve {

/// \brief One step of the `normalizer` (applied in order to the whole text).
struct HfNormalizerStep {
  /// \brief The normalizer types implemented.
  enum class Kind {
    kPrepend,  ///< `Prepend`: put `content` in front of non-empty text
    kReplace,  ///< `Replace` with a `String` pattern: every `pattern` becomes `content`
    kNfc,      ///< `NFC`: Unicode canonical composition (utf8proc)
  };
  Kind kind;            ///< which normalizer
  std::string pattern;  ///< kReplace: the literal text replaced
  std::string content;  ///< kPrepend: the prefix; kReplace: the replacement
};

/// \brief The `Metaspace` pre-tokenizer (and decoder) of SentencePiece-style files written
/// by newer transformers (`legacy: false`), in place of the Prepend/Replace normalizer:
/// ```
/// "Hi there"   (a segment between added tokens)
///  │ ' ' → "▁", then "▁" in front (always; or only for the segment at the start of the text)
/// "▁Hi▁there"
///  │ split: true → ["▁Hi", "▁there"] (each "▁" starts a word); false → one word
/// ```
struct HfMetaspace {
  /// \brief `prepend_scheme` (older files: `add_prefix_space` true = always, false = never).
  enum class Prepend {
    kAlways,  ///< every segment not already starting with the replacement
    kFirst,   ///< only the segment that starts the text (offset 0, no added token before it)
    kNever,   ///< none
  };
  std::string replacement = "\xE2\x96\x81";  ///< the character spaces become ("▁", U+2581)
  Prepend prepend = Prepend::kAlways;          ///< where the replacement is put in front
  bool split = true;                           ///< words begin at each replacement
};

/// \brief One step of the `decoder`; each maps a list of token strings to a list.
struct HfDecoderStep {
  /// \brief The decoder types implemented.
  enum class Kind {
    kReplace,       ///< every `pattern` in each token becomes `content`
    kByteFallback,  ///< runs of `<0xHH>` tokens become their bytes (U+FFFD each if not UTF-8)
    kFuse,          ///< all tokens become one
    kStrip,         ///< up to `start` leading `content` characters are removed from each token
    kByteLevel,     ///< GPT-2 alphabet → bytes, all tokens fused, ill-formed UTF-8 → U+FFFD
    kMetaspace,     ///< `pattern` → " " in each token; in the first token (unless `start` is
                    ///< 0, prepend_scheme never) every `pattern` is removed instead
  };
  Kind kind;            ///< which decoder
  std::string pattern;  ///< kReplace: the literal text replaced
  std::string content;  ///< kReplace: the replacement; kStrip: the character stripped
  int start = 0;        ///< kStrip: how many leading characters at most
};

/// \brief An entry of `added_tokens` (not lstrip/rstrip/single_word).
struct HfAddedToken {
  int id;                  ///< its id (in `model.vocab`, or beyond it for Llama 3's specials)
  std::string content;     ///< its text before normalization, e.g. `<|end_story|>`
  bool normalized = true;  ///< matched in the normalized text (else in the raw text, first)
  bool special = true;     ///< a control token (`decode` skips BOS/EOS; pieces are marked)
};

/// \brief Everything `tokenizer.json` (+ `tokenizer_config.json`) says, validated.
struct HfBpeSpec {
  std::vector<std::string> vocab;           ///< (vocab_size) piece of each id
  std::vector<std::array<int, 3>> merges;   ///< (n_merges) in rank order: left, right, merged id
  std::vector<HfNormalizerStep> normalizer; ///< applied in order; empty: identity
  std::vector<HfDecoderStep> decoder;       ///< applied in order; empty: pieces concatenated
  std::vector<HfAddedToken> added_tokens;   ///< matched before BPE (see `normalized`)
  std::vector<HfPreTokenizerStep> pre_tokenizer;  ///< empty: the whole segment is one word
  std::optional<HfMetaspace> metaspace;     ///< a `Metaspace` pre-tokenizer (then the only one)
  bool byte_level = false;     ///< words are mapped to the GPT-2 byte alphabet before BPE
  bool ignore_merges = false;  ///< `model.ignore_merges`: a word in the vocabulary is one token
  int unk_id = 0;              ///< `model.unk_token`; −1: none (unknown characters dropped)
  bool fuse_unk = false;       ///< `model.fuse_unk`: consecutive unknown characters → one unk
  bool byte_fallback = false;  ///< `model.byte_fallback`: unknown characters → `<0xHH>` tokens
  int bos_id = 1;              ///< `bos_token` of tokenizer_config.json; −1: none (Qwen2)
  int eos_id = 2;              ///< `eos_token` of tokenizer_config.json
};

/// \brief Hugging Face BPE for the configuration described in the file comment.
///
/// Decoding runs the decoder steps over the pieces of the sequence (BOS and EOS produce no
/// text). For TinyStories-656K that is: "▁"→" ", byte tokens → bytes, fuse, strip one leading
/// space — the exact inverse of the normalizer for any text made of characters in the
/// vocabulary. A character outside it is encoded as `<unk>` (the vocabulary has no byte
/// tokens) and decodes as " <unk>" (`tokenizers` decodes an added token from its normalized
/// content, "▁<unk>"): those texts cannot round-trip, nor can text that contains an added
/// token's normalized content (" <|end_story|>" encodes as EOS, which decodes to nothing).
class HfBpeTokenizer final : public Tokenizer {
 public:
  /// \brief Takes a validated spec (ids in range); throws `InvalidArgument` if it is not.
  explicit HfBpeTokenizer(HfBpeSpec spec);

  /// \brief Split on added tokens, normalize, pre-tokenize, BPE each word; optionally BOS/EOS
  /// around. Bytes that are not valid UTF-8 are first replaced by U+FFFD (`utf8_lossy`), which
  /// is what `tokenizers` receives from any caller holding a string, instead of failing.
  std::vector<int> encode(std::string_view text, bool add_bos, bool add_eos) const override;
  /// \brief The decoder applied to one token: a `Strip` after `Fuse` (which strips the start of
  /// the whole text) applies only when `prev_token` is BOS; a byte token gives its raw byte.
  std::string decode_token(int prev_token, int token) const override;
  /// \brief The decoder applied to the whole sequence, as `tokenizers` does (BOS/EOS skipped).
  std::string decode(const std::vector<int>& tokens) const override;
  /// \brief `tokenizers`' `decode(ids, skip_special_tokens=false)`: every token, BOS/EOS too.
  std::string decode_all(const std::vector<int>& tokens) const;
  /// \brief Whether `id` is an added token flagged `special`.
  bool is_special(int id) const;

  /// \brief Number of ids in `model.vocab`.
  int vocab_size() const override { return static_cast<int>(spec_.vocab.size()); }
  /// \brief Beginning-of-sequence id, −1 when the tokenizer has none (then `encode` never
  /// adds one).
  int bos_id() const override { return spec_.bos_id; }
  /// \brief End-of-sequence id.
  int eos_id() const override { return spec_.eos_id; }
  /// \brief Unknown-token id.
  int unk_id() const { return spec_.unk_id; }
  /// \brief The vocabulary piece of `id` (with "▁", as stored); `InvalidArgument` if outside.
  const std::string& piece(int id) const;
  /// \brief The id of `piece` in the vocabulary, or −1.
  int find_piece(const std::string& piece) const;
  /// \brief The normalizer applied to `text`.
  std::string normalize(std::string_view text) const;
  /// \brief Everything the tokenizer was built from (`nanoserve convert` writes it to GGUF).
  const HfBpeSpec& spec() const { return spec_; }

 private:
  void check_id(int id) const;
  void encode_segment(std::string_view segment, std::vector<int>& out) const;
  void encode_normalized(std::string_view text, bool text_start, std::vector<int>& out) const;
  void encode_words(std::string_view text, bool text_start, std::vector<int>& out) const;
  void encode_metaspace(std::string_view text, bool text_start, std::vector<int>& out) const;
  std::vector<std::string> run_decoder(std::vector<std::string> tokens, bool text_start,
                                       bool streaming) const;

  HfBpeSpec spec_;
  std::unordered_map<std::string, int> piece_to_id_;
  std::unordered_map<uint64_t, std::array<int, 2>> merge_rank_;  // (left,right) → rank, merged
  std::array<int, 256> byte_to_id_{};  // id of "<0xHH>", or −1
  std::vector<std::pair<std::string, int>> added_patterns_;  // normalized content → id
  std::vector<std::pair<std::string, int>> raw_patterns_;    // content (normalized=false) → id
  std::shared_ptr<const RegexSplitter> metaspace_words_;     // Metaspace split: "▁" starts a word
  // (vocab_size) the string the decoder sees for each id: the piece, or for an added token
  // its normalized content ("▁<unk>"), which is what `tokenizers` decodes it from.
  std::vector<std::string> decoder_input_;
};

/// \brief Reads a `tokenizer.json` and, from the same directory, `tokenizer_config.json`
/// (which names `bos_token` and `eos_token`).
///
/// Only the subset described above is accepted; any other normalizer, pre-tokenizer, model
/// type or option (dropout, `Split` behaviours other than `Isolated`, lstrip/rstrip added
/// tokens, `add_prefix_space`, …) is a `LoadError` naming the JSON field, rather than a
/// silently different tokenization; so is a regex PCRE2 cannot compile.
///
/// Limits, checked before the vocabulary is built: the file is at most 64 MiB, the JSON nests
/// at most `kMaxJsonDepth` levels, and the vocabulary has at most `max_vocab` tokens (the
/// model's embedding rows when a model is known, else `kMaxHfVocab`) — enforced while parsing
/// by bounding the number of JSON values, so a file claiming millions of tokens is refused
/// before their tree is in memory.
std::unique_ptr<HfBpeTokenizer> load_hf_tokenizer(const std::string& path, int max_vocab = 0);

/// \brief The vocabulary limit of a `tokenizer.json` read without a model: 2^18 = 262,144
/// tokens, above every Llama-family vocabulary in use (Llama 3: 128,256; Qwen2.5: 151,936).
inline constexpr int kMaxHfVocab = 1 << 18;

/// \brief Builds the byte-level BPE of a GGUF file whose `tokenizer.ggml.model` is `gpt2`
/// (what llama.cpp writes for Llama 3, Qwen2, SmolLM2): the same tokenizer its
/// `tokenizer.json` describes.
///
/// \param file        the GGUF path, for messages
/// \param tokens      (n) `tokenizer.ggml.tokens`, in the GPT-2 byte alphabet
/// \param token_types empty (all normal) or (n) `tokenizer.ggml.token_type`; control (3) and
///                    user-defined (4) tokens are matched in the raw text like `added_tokens`
///                    with normalized=false (control ones `special`)
/// \param merges      `tokenizer.ggml.merges`, "left right" in rank order
/// \param pre         `tokenizer.ggml.pre`, mapped by `gguf_pre_tokenizer` ("" reads as
///                    "default", as llama.cpp does)
/// \param bos_id      `tokenizer.ggml.bos_token_id`, −1 when absent
/// \param eos_id      `tokenizer.ggml.eos_token_id` (required)
/// \throws LoadError naming `file` and the metadata key (unknown pre-tokenizer, a merge that
///         is not two tokens whose concatenation is a token, types of the wrong length, …).
std::unique_ptr<HfBpeTokenizer> make_gguf_bpe_tokenizer(const std::string& file,
                                                        std::vector<std::string> tokens,
                                                        const std::vector<int32_t>& token_types,
                                                        const std::vector<std::string>& merges,
                                                        const std::string& pre, int64_t bos_id,
                                                        int64_t eos_id);

/// \brief `load_hf_tokenizer` on texts already in memory; the names are used in messages
/// (the fuzz target calls this); `max_vocab` as for `load_hf_tokenizer`.
std::unique_ptr<HfBpeTokenizer> parse_hf_tokenizer(std::string_view tokenizer_json,
                                                   const std::string& tokenizer_name,
                                                   std::string_view config_json,
                                                   const std::string& config_name,
                                                   int max_vocab = 0);

}  // namespace nanoserve
