#pragma once
/// \file
/// \brief Any loaded model and its tokenizer as the GGUF file llama.cpp's converter
/// (`convert_hf_to_gguf.py`, `convert_llama2c_to_ggml`) would write: what `nanoserve convert`
/// does.
///
/// ```
/// Model (fp32 host) ──► llama.cpp layout ──► tensors: 1-D (norms, biases) F32,
///   llama2.c .bin         llama: wq/wk rows      2-D in the chosen type; rows that are not
///   HF directory          permuted to adjacent   whole blocks fall back as llama.cpp does
///   GGUF                  pairs if rotate-half   (`gguf_row_type`)
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

/// \brief The ggml type of a `--dtype` name: fp32, fp16, bf16, q8_0, q4_0 or q4_k;
/// `InvalidArgument` listing them for any other.
uint32_t parse_gguf_dtype(const std::string& name);

/// \brief The type a 2-D tensor asked to be `ggml_type` is stored as, given its rows of
/// `row_length` elements — llama.cpp's fallbacks: Q4_K needs whole 256-element super-blocks,
/// else Q5_0 (`llama_tensor_get_type`'s fallback in llama-quantize); Q8_0, Q4_0 and Q5_0 need
/// whole 32-element blocks, else F16 (both llama-quantize and `convert_hf_to_gguf.py`).
/// stories260K (dim 64, hidden 172) as q4_k: 64-wide rows Q5_0, ffn_down's 172-wide rows F16.
uint32_t gguf_row_type(uint32_t ggml_type, uint64_t row_length);

/// \brief Whether `gguf_layout` permutes wq/wk of a model with config `c` (a `llama` model
/// with rotate-half RoPE).
bool gguf_permutes_qk(const ModelConfig& c);

/// \brief The row of wq/wk (in the model's rotate-half order) that row `file_row` of the
/// permuted GGUF tensor holds: file row h·hd + 2j + a ← model row h·hd + a·hd/2 + j.
int gguf_source_row(int file_row, int head_dim);

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
/// row j → 2j, row j + head_dim/2 → 2j + 1; `gguf_source_row`), and its RoPE style becomes
/// adjacent pairs. Mathematically the same model; others are returned unchanged. Empty wq/wk
/// vectors (linears kept quantized elsewhere) stay empty.
Model gguf_layout(Model model);

/// \brief The GGUF file: `gguf_layout(model)` with `vocab`, 2-D tensors as `ggml_type` (see the
/// file comment), the rest F32. Throws `InvalidArgument` for what GGUF cannot store (biases
/// outside qwen2, an architecture other than llama and qwen2).
std::vector<uint8_t> export_gguf(const Model& model, const GgufVocabulary& vocab,
                                 uint32_t ggml_type);

}  // namespace nanoserve
