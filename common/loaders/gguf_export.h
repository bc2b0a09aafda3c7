#pragma once
/// \file
/// \brief Any loaded model and its tokenizer as the GGUF file llama.cpp's converter
/// (`convert_hf_to_gguf.py`, `convert_llama2c_to_ggml`) would write: what `nanoserve convert`
/// does.
///
/// ```
/// Model (fp32 host) ──► llama.cpp layout ──► tensors: 1-D (norms, biases) F32,
///   llama2.c .bin         llama: wq/wk rows      2-D in the chosen type (Q8_0 rows that are
///   HF directory          permuted to adjacent   not whole blocks of 32 fall back to F16,
///   GGUF                  pairs if rotate-half   as llama.cpp does)
/// Tokenizer ──────────► tokenizer.ggml.*: "llama" (scores, token types) or "gpt2" (merges,
///                        tokenizer.ggml.pre named after the pre-tokenizer's patterns)
/// ```
///
/// Vocabularies: a llama2.c / GGUF SentencePiece vocabulary is copied with its scores (spaces
/// written as "▁", byte pieces typed BYTE, BOS/EOS CONTROL, unk UNKNOWN). A SentencePiece-style
/// `tokenizer.json` (BPE with byte fallback) becomes a "llama" vocabulary whose scores are the
/// merge ranks negated (a token no merge makes scores −1e10, so it is never merged into):
/// SentencePiece's highest-score-first equals BPE's lowest-rank-first whenever every piece is
/// made by exactly one merge, which holds for the files of the README's table but not in
/// general (llama.cpp's own converter writes −1000 for every score). A byte-level
/// `tokenizer.json` becomes "gpt2" with its merges; its pre-tokenizer must be one llama.cpp
/// names (`llama-bpe`, `qwen2`, `smollm`, `gpt2`). Ids the tokenizer does not use, up to the
/// model's embedding rows, are `[PADn]` tokens typed UNUSED, as llama.cpp pads Qwen2.

#include <cstdint>
#include <string>
#include <vector>

#include "common/loaders/gguf_vocabulary.h"
#include "common/model.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve {

/// \brief The ggml type of a `--dtype` name: fp32, fp16, bf16 or q8_0; `InvalidArgument`
/// listing them for any other.
uint32_t parse_gguf_dtype(const std::string& name);

/// \brief The GGUF vocabulary of `tokenizer` (a `LlamaTokenizer` or `HfBpeTokenizer`), with
/// `n_rows` tokens (the model's embedding rows; ids beyond the tokenizer's are padding);
/// `chat_template` is stored as `tokenizer.chat_template` when not empty. Throws
/// `InvalidArgument` naming `source` for a tokenizer GGUF cannot describe (the byte tokenizer
/// of synthetic models, a pre-tokenizer llama.cpp has no name for, more tokens than rows).
GgufVocabulary gguf_vocabulary_of(const Tokenizer& tokenizer, int n_rows,
                                  const std::string& chat_template, const std::string& source);

/// \brief `model` with its tensors in the layout of a GGUF file of its architecture: a
/// `llama` model with rotate-half RoPE (a Hugging Face checkpoint) has the rows of each head of
/// wq and wk permuted so that adjacent pairs rotate together (llama.cpp's `permute`:
/// row j → 2j, row j + head_dim/2 → 2j + 1), and its RoPE style becomes adjacent pairs.
/// Mathematically the same model; others are returned unchanged.
Model gguf_layout(Model model);

/// \brief The GGUF file: `gguf_layout(model)` with `vocab`, 2-D tensors as `ggml_type` (see the
/// file comment), the rest F32. Throws `InvalidArgument` for what GGUF cannot store (biases
/// outside qwen2, an architecture other than llama and qwen2).
std::vector<uint8_t> export_gguf(const Model& model, const GgufVocabulary& vocab,
                                 uint32_t ggml_type);

}  // namespace nanoserve
