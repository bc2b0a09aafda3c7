#pragma once
/// \file
/// \brief Small random models of each Hugging Face architecture the loader reads, and a
/// sharded checkpoint written to a directory in the layout of `save_pretrained`: what the HF
/// loader's tests load against the oracle (tests/common/test_loader_hf_sharded.cpp) and what
/// `peers/write_hf_checkpoints` writes for the comparison with transformers on the GPU machine
/// (scripts/hf_logits_check.py). Random weights: their text is meaningless.
///
///     architecture  class               what it exercises
///     llama         LlamaForCausalLM    GQA, rope θ 5e5 with Llama 3.1's `rope_scaling`
///                                       (llama3, factor 8, scaled down so that all three
///                                       frequency bands occur), untied lm_head
///     qwen2         Qwen2ForCausalLM    q/k/v biases, rope θ 1e6, tied embeddings
///     mistral       MistralForCausalLM  an explicit head_dim (n_heads * head_dim != hidden)
///
/// All: hidden 64, intermediate 128, 2 layers, 4 heads, 2 KV heads, head_dim 16 (mistral 32),
/// vocab 96, 64 positions (llama 128: its scaling's original context is 64), RMSNorm eps 1e-6,
/// rotate-half RoPE (the HF layout).

#include <cstdint>
#include <string>
#include <vector>

#include "common/loaders/hf_loader.h"
#include "common/loaders/synthetic_model.h"
#include "common/model.h"

namespace nanoserve {

/// \brief The architectures `make_synthetic_hf_model` builds: "llama", "qwen2", "mistral".
std::vector<std::string> synthetic_hf_architectures();

/// \brief A small random model of `architecture` (see the file comment) whose every weight is
/// already a bf16 value, so that a BF16 checkpoint stores it exactly. Matrices and the
/// embedding as `make_synthetic_model` draws them; norm gains 1 + U(±0.35) and qwen2's biases
/// U(±0.5), drawn too, so that a gain or bias read into the wrong place changes the logits.
/// Throws `InvalidArgument` naming the known architectures for another one.
Model make_synthetic_hf_model(const std::string& architecture,
                              uint64_t seed = kDefaultSyntheticSeed);

/// \brief Writes `checkpoint` into `dir` (created when missing; files of the same names
/// replaced): `config.json`, `model.safetensors.index.json` and each shard. Throws `Error`
/// naming the path that cannot be created or written.
void write_hf_checkpoint(const HfShardedCheckpoint& checkpoint, const std::string& dir);

}  // namespace nanoserve
