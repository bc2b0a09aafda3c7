#pragma once
/// \file
/// \brief llama.cpp's token types (GGUF `tokenizer.ggml.token_type`), shared by the GGUF
/// vocabulary reader and the tokenizer built from it.

#include <cstdint>

namespace nanoserve {

/// \brief llama.cpp's token types (`tokenizer.ggml.token_type`, `llama_token_type`).
enum class GgufTokenType : int32_t {
  kUndefined = 0,    ///< not specified
  kNormal = 1,       ///< an ordinary piece
  kUnknown = 2,      ///< `<unk>`
  kControl = 3,      ///< `<s>`, `</s>`, …: never produced by encoding text
  kUserDefined = 4,  ///< added tokens SentencePiece matches whole before BPE
  kUnused = 5,       ///< reserved
  kByte = 6,         ///< byte-fallback tokens `<0x00>`..`<0xFF>`
};

}  // namespace nanoserve
