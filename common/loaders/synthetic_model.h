#pragma once
/// \file
/// \brief Synthetic Llama models by name: real published shapes with deterministic random
/// weights. They exercise every code path and benchmark realistic sizes, but their text is
/// meaningless (docs/design.md, "Models").
///
/// | name                   | dim  | hidden | layers | heads | kv | vocab  | ctx  | theta |
/// |------------------------|------|--------|--------|-------|----|--------|------|-------|
/// | synthetic:tiny         | 64   | 176    | 4      | 8     | 4  | 512    | 256  | 1e4   |
/// | synthetic:small        | 256  | 688    | 6      | 8     | 2  | 4096   | 1024 | 1e4   |
/// | synthetic:llama2-7b    | 4096 | 11008  | 32     | 32    | 32 | 32000  | 4096 | 1e4   |
/// | synthetic:llama2-13b   | 5120 | 13824  | 40     | 40    | 40 | 32000  | 4096 | 1e4   |
/// | synthetic:llama2-70b   | 8192 | 28672  | 80     | 64    | 8  | 32000  | 4096 | 1e4   |
/// | synthetic:llama3-8b    | 4096 | 14336  | 32     | 32    | 8  | 128256 | 8192 | 5e5   |
/// | synthetic:llama3-70b   | 8192 | 28672  | 80     | 64    | 8  | 128256 | 8192 | 5e5   |
///
/// All use head_dim = dim / heads, RMSNorm eps 1e-5, adjacent-pair RoPE (Meta's reference
/// implementation rotates adjacent pairs) and an untied classifier.
///
/// Weights: element `i` of the tensor with id `t` is `synthetic_weight(seed, t, i, std)`, a
/// pure function, so a GPU kernel can regenerate any element without the host copy. Matrices
/// are uniform with std 1/sqrt(fan_in) (so `W x` keeps the scale of `x`), the embedding has
/// std 1 (the residual stream starts at RMS ~1), norm gains are exactly 1, and the classifier
/// has std 1/sqrt(dim), so logits have std ~1: neither flat nor one-hot.

#include <cstdint>
#include <string>
#include <vector>

#include "common/model.h"
#include "common/sampling/rng.h"

namespace nanoserve {

/// \brief Seed used when a synthetic model is requested without one.
inline constexpr uint64_t kDefaultSyntheticSeed = 1234;

/// \brief Largest fp32 weight footprint `make_synthetic_model` materializes on the host (2 GiB).
inline constexpr int64_t kSyntheticHostLimitBytes = int64_t(2) << 30;

/// \brief The names accepted by `synthetic_config`, with the "synthetic:" prefix.
std::vector<std::string> synthetic_model_names();

/// \brief The config of a synthetic model (`synthetic:tiny`, …); the prefix is optional.
/// Throws `InvalidArgument` listing the known names for an unknown one.
ModelConfig synthetic_config(const std::string& name);

/// \brief Model-wide synthetic tensors; their ids are the enum values.
enum class SyntheticTensor : uint32_t {
  kEmbedding = 0,   ///< token embedding
  kFinalNorm = 1,   ///< final RMSNorm gain (constant 1; id reserved)
  kClassifier = 2,  ///< output projection
};

/// \brief Per-layer synthetic tensors; layer `l`'s tensor `k` has id `16 + 16 l + k`.
enum class SyntheticLayerTensor : uint32_t {
  kAttnNorm = 0,  ///< attention RMSNorm gain (constant 1; id reserved)
  kWq = 1,        ///< query projection
  kWk = 2,        ///< key projection
  kWv = 3,        ///< value projection
  kWo = 4,        ///< output projection
  kFfnNorm = 5,   ///< FFN RMSNorm gain (constant 1; id reserved)
  kW1 = 6,        ///< gate projection
  kW2 = 7,        ///< down projection
  kW3 = 8,        ///< up projection
};

/// \brief The id (the `tensor_id` of `synthetic_weight`) of a model-wide tensor.
inline uint32_t synthetic_tensor_id(SyntheticTensor tensor) { return uint32_t(tensor); }
/// \brief The id of tensor `tensor` of layer `layer`.
inline uint32_t synthetic_tensor_id(int layer, SyntheticLayerTensor tensor) {
  return 16u + 16u * uint32_t(layer) + uint32_t(tensor);
}

/// \brief Maps 32 random bits to a uniform value with mean 0 and standard deviation `std`.
inline float synthetic_weight_from_bits(uint32_t bits, float std) {
  const float u = uniform_float(bits);              // [0, 1)
  return (2.0f * u - 1.0f) * (1.7320508f * std);  // sqrt(3) std: the std of U(-a, a) is a/sqrt(3)
}

/// \brief Element `i` of synthetic tensor `tensor_id`: uniform on [-sqrt(3) std, sqrt(3) std)
/// (mean 0, standard deviation `std`), from Philox keyed by `seed`, counter (i / 4, tensor id),
/// word i % 4 — a pure function of its arguments.
inline float synthetic_weight(uint64_t seed, uint32_t tensor_id, uint64_t i, float std) {
  const Philox4x32 r = random_bits(seed, i / 4, RngStream::kWeights, tensor_id);
  return synthetic_weight_from_bits(r[i % 4], std);
}

/// \brief Materializes weights for any valid `config` (e.g. a custom shape for a kernel test)
/// by the rules above (a tied classifier is the std-1 embedding, so its logits are sharper).
/// Throws `InvalidArgument` when the fp32 weights would exceed `max_bytes`.
Model make_synthetic_model(const ModelConfig& config, uint64_t seed,
                           int64_t max_bytes = kSyntheticHostLimitBytes);

/// \brief Materializes a synthetic model's weights with `seed`. Throws `InvalidArgument` when the
/// fp32 weights would exceed `max_bytes` (use `synthetic_config` for shapes only, or the GPU
/// path that regenerates weights on the device).
Model make_synthetic_model(const std::string& name, uint64_t seed = kDefaultSyntheticSeed,
                           int64_t max_bytes = kSyntheticHostLimitBytes);

/// \brief One tensor of the synthetic model with `config` and `seed`, exactly as
/// `make_synthetic_model` fills it: `name` is a `LayerWeights` field ("attn_norm", "wq", …,
/// "w3") for `layer` in [0, n_layers), or "token_embedding", "final_norm", "classifier" for
/// `layer` -1. No host limit: it is how models too large for `make_synthetic_model` are
/// uploaded to a GPU tensor by tensor. Throws `InvalidArgument` for an unknown name or layer.
std::vector<float> synthetic_tensor(const ModelConfig& config, uint64_t seed,
                                    const std::string& name, int layer);

}  // namespace nanoserve
