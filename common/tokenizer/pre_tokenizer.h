#pragma once
/// \file
/// \brief The `pre_tokenizer` of a byte-level BPE `tokenizer.json` — `Split` (regex,
/// `Isolated`), `Digits`, `ByteLevel` — and the patterns llama.cpp's `tokenizer.ggml.pre` names.
///
/// A pre-tokenizer cuts text into words before BPE; merges never cross a word boundary. Each
/// step refines the pieces the previous one made:
/// ```
/// "I'll pay 1234!"
///  │ Split(Llama 3 pattern, Isolated)      ["I", "'ll", " pay", " ", "123", "4", "!"]
///  │ ByteLevel(use_regex=false)            bytes → GPT-2 alphabet: " pay" → "Ġpay"
/// ```

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/tokenizer/regex_split.h"

namespace nanoserve {

/// \brief GPT-2's pattern (the one `ByteLevel` applies when `use_regex` is true).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
/// \brief Llama 3's `Split` pattern (numbers in groups of up to three digits).
inline constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// \brief Qwen2's `Split` pattern (Llama 3's with one digit per piece).
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// \brief One step of the pre-tokenizer; every kind splits with a regex.
struct HfPreTokenizerStep {
  /// \brief The pre-tokenizer types implemented.
  enum class Kind {
    kSplit,      ///< `Split` with a `Regex` pattern, behaviour `Isolated`, not inverted
    kDigits,     ///< `Digits`: numbers (`\p{N}`) apart, one per piece if `individual_digits`
    kByteLevel,  ///< `ByteLevel`: the GPT-2 pattern if `use_regex`; marks the model byte-level
  };
  Kind kind;                                    ///< which pre-tokenizer
  std::shared_ptr<const RegexSplitter> regex;   ///< the pattern; null for ByteLevel without regex
};

/// \brief The pieces of `text` after every step, in order (their concatenation is `text`).
std::vector<std::string> pre_tokenize(const std::vector<HfPreTokenizerStep>& steps,
                                      std::string_view text);

/// \brief The steps `tokenizer.json` would hold for llama.cpp's `tokenizer.ggml.pre` value
/// `name`: `llama-bpe`/`llama3` (Llama 3), `qwen2`, `smollm` (single digits, then GPT-2), and
/// `gpt2`/`default`; a ByteLevel step ends each. Throws `InvalidArgument` listing the names
/// known for any other value.
std::vector<HfPreTokenizerStep> gguf_pre_tokenizer(const std::string& name);

}  // namespace nanoserve
