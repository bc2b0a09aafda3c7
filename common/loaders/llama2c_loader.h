#pragma once
/// \file
/// \brief The llama2.c "v0" checkpoint format (Karpathy's `run.c` / `export.py --version 0`).
///
///     offset 0   int32 x 7   dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
///     offset 28  fp32 tensors, each layer-stacked tensor stored for all layers at once:
///                token_embedding (vocab, dim)
///                rms_att (L, dim)  wq (L, dim, dim)  wk (L, kv_dim, dim)  wv (L, kv_dim, dim)
///                wo (L, dim, dim)  rms_ffn (L, dim)  w1 (L, hidden, dim)  w2 (L, dim, hidden)
///                w3 (L, hidden, dim)  rms_final (dim)
///                freq_cis_real (seq_len, head_dim/2)  freq_cis_imag (seq_len, head_dim/2)
///                [wcls (vocab, dim)   only when vocab_size < 0: an untied classifier]
///
/// The format stores no hyper-parameters beyond the header, so the llama2.c conventions apply:
/// head_dim = dim / n_heads, RoPE theta 10000 on adjacent pairs, RMSNorm eps 1e-5. The stored
/// freq_cis tables are skipped (RoPE is recomputed from theta).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/model.h"

namespace nanoserve {

/// \brief Size of the llama2.c v0 header: seven int32.
inline constexpr size_t kLlama2cHeaderBytes = 7 * sizeof(int32_t);

/// \brief Loads a llama2.c v0 `.bin` file; throws `LoadError(path, field, …)` on bad input.
Model load_llama2c(const std::string& path);

/// \brief Loads a llama2.c v0 checkpoint held in memory; `name` stands for the file in errors.
///
/// The size the header implies is checked against `size` exactly before anything is allocated.
Model load_llama2c_from_memory(const uint8_t* data, size_t size, const std::string& name);

/// \brief Serializes `model` in llama2.c v0 format (negative vocab_size when the classifier is
/// untied; freq_cis tables as llama2.c exports them). Throws `InvalidArgument` when the config
/// cannot be expressed in the format (head_dim != dim/n_heads, theta != 1e4, eps != 1e-5,
/// rotate-half RoPE).
std::vector<uint8_t> save_llama2c(const Model& model);

}  // namespace nanoserve
