#pragma once
/// \file
/// \brief `load_tokenizer`: opens a tokenizer file of any supported format by its name.

#include <memory>
#include <string>

#include "common/tokenizer/tokenizer.h"

namespace nanoserve {

/// \brief Loads `path` as a Hugging Face `tokenizer.json` when it ends in `.json`
/// (`load_hf_tokenizer`), else as a llama2.c `tokenizer.bin` (`load_llama2c_tokenizer`).
///
/// \param path a `tokenizer.json` or a llama2.c `tokenizer.bin`
/// \param expected_vocab_size the model's vocab_size, or 0 when there is no model to match.
///        A llama2.c file must hold exactly that many tokens (the format has no count); a
///        `tokenizer.json` may hold fewer (models often pad their embedding table), never more.
/// \throws LoadError naming the file and field; a `.gguf` path is rejected with a pointer to
///         the GGUF loader, whose vocabulary comes with the model (`make_gguf_llama_tokenizer`).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path, int expected_vocab_size);

}  // namespace nanoserve
