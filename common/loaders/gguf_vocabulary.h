#pragma once
/// \file
/// \brief The tokenizer vocabulary embedded in a GGUF file (`tokenizer.ggml.*`), validated and
/// in plain vectors, for the tokenizer that builds on it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/gguf_token_type.h"
#include "common/loaders/gguf_file.h"

namespace nanoserve {

/// \brief The vocabulary stored in a GGUF file's metadata.
struct GgufVocabulary {
  std::string model;  ///< `tokenizer.ggml.model`: "llama" = SentencePiece, "gpt2" = BPE
  std::vector<std::string> tokens;         ///< `tokenizer.ggml.tokens`: the piece of each id
  std::vector<float> scores;               ///< `tokenizer.ggml.scores`, or empty when absent
  std::vector<GgufTokenType> token_types;  ///< `tokenizer.ggml.token_type`, or empty when absent
  std::vector<std::string> merges;         ///< `tokenizer.ggml.merges` ("a b" per rank), or empty
  std::string pre;                         ///< `tokenizer.ggml.pre` (BPE pre-tokenizer), or ""
  std::string chat_template;               ///< `tokenizer.chat_template` (Jinja), or ""
  int bos_id = -1;                         ///< `tokenizer.ggml.bos_token_id`, -1 when absent
  int eos_id = -1;                         ///< `tokenizer.ggml.eos_token_id`, -1 when absent
  int unk_id = -1;                         ///< `tokenizer.ggml.unknown_token_id`, -1 when absent
  int pad_id = -1;                         ///< `tokenizer.ggml.padding_token_id`, -1 when absent
  std::optional<bool> add_bos;             ///< `tokenizer.ggml.add_bos_token`, if present
  std::optional<bool> add_eos;             ///< `tokenizer.ggml.add_eos_token`, if present
};

/// \brief Extracts and validates the vocabulary: `tokenizer.ggml.model` and `.tokens` are
/// required; scores and types must have one entry per token; special ids must be inside the
/// vocabulary (0xFFFFFFFF, llama.cpp's "none", reads as -1).
GgufVocabulary gguf_vocabulary(const GgufFile& file);

/// \brief Reads the vocabulary of a GGUF file.
GgufVocabulary load_gguf_vocabulary(const std::string& path);

/// \brief Reads the vocabulary of a GGUF file held in memory; `name` stands for the file.
GgufVocabulary load_gguf_vocabulary_from_memory(const uint8_t* data, size_t size,
                                                const std::string& name);

}  // namespace nanoserve
