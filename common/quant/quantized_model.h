#pragma once
/// \file
/// \brief `QuantizedModel`: a Llama model whose seven linear layers per block (wq, wk, wv, wo,
/// w1, w2, w3) are weight-only quantized, and the names that tie a linear layer to its shape
/// and to the activation that feeds it.
///
/// What stays fp32, and why:
///  - the **RMSNorm gains** (2·dim + dim floats): negligible bytes, and AWQ folds its scales
///    into them, so they must keep full precision;
///  - the **token embedding**: a lookup reads one row per token, not the whole matrix, so
///    quantizing it saves memory but no decode bandwidth;
///  - the **classifier**: its error lands directly on the logits, and both real models here tie
///    it to the embedding, where it is a large share of all weights (stories260K: 32K of 260K;
///    TinyStories-656K: 262K of 656K). GPTQ's and AWQ's reference implementations keep
///    `lm_head` in 16-bit for the same reason.
/// So the decode-time weight traffic that matters — the linears — is what shrinks.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/model.h"
#include "common/oracle/forward.h"
#include "common/quant/quantized_linear.h"

namespace nanoserve::quant {

/// \brief The seven linear layers of a block, in file order.
enum class LinearId { kWq = 0, kWk, kWv, kWo, kW1, kW2, kW3 };
/// \brief Number of linear layers per block.
inline constexpr int kLinearsPerLayer = 7;
/// \brief Every `LinearId` in order, for loops.
inline constexpr std::array<LinearId, kLinearsPerLayer> kLinearIds = {
    LinearId::kWq, LinearId::kWk, LinearId::kWv, LinearId::kWo,
    LinearId::kW1, LinearId::kW2, LinearId::kW3};

/// \brief "wq", "wk", "wv", "wo", "w1", "w2" or "w3".
const char* to_string(LinearId id);
/// \brief The fp32 weights of `id` in `layer` (rows, cols) row-major.
std::vector<float>& linear_weights(LayerWeights& layer, LinearId id);
/// \brief Read-only `linear_weights`.
const std::vector<float>& linear_weights(const LayerWeights& layer, LinearId id);
/// \brief Output features of `id` (q_dim, kv_dim, dim or hidden_dim).
int linear_rows(const ModelConfig& config, LinearId id);
/// \brief Input features of `id`.
int linear_cols(const ModelConfig& config, LinearId id);
/// \brief The activation that feeds `id` (wq/wk/wv: kAttention, wo: kAttentionOut,
/// w1/w3: kFfn, w2: kFfnHidden).
oracle::LinearInput linear_input(LinearId id);

/// \brief How the linears were quantized (recorded in the file; dequantization is the same).
enum class QuantMethod { kRtn = 0, kGptq = 1, kAwq = 2 };
/// \brief "rtn", "gptq" or "awq".
const char* to_string(QuantMethod method);
/// \brief The method named `name` ("rtn", "gptq", "awq"); `InvalidArgument` otherwise.
QuantMethod parse_quant_method(const std::string& name);

/// \brief The quantized linears of one block, indexed by `LinearId`.
struct QuantizedLayer {
  std::array<QuantizedLinear, kLinearsPerLayer> linears;  ///< by LinearId
  /// \brief The linear `id`.
  QuantizedLinear& operator[](LinearId id) { return linears[size_t(id)]; }
  /// \brief The linear `id`, read-only.
  const QuantizedLinear& operator[](LinearId id) const { return linears[size_t(id)]; }
};

/// \brief A model with quantized linear layers.
struct QuantizedModel {
  /// \brief Config, embedding, norms, final norm, classifier in fp32; the seven linear weight
  /// vectors of every `LayerWeights` are empty (their values live in `layers`).
  Model base;
  QuantScheme scheme;                  ///< shared by every linear
  QuantMethod method = QuantMethod::kRtn;  ///< how they were produced
  std::vector<QuantizedLayer> layers;  ///< n_layers blocks

  /// \brief The fp32 model the quantized weights stand for (linears dequantized), for the
  /// oracle and for evaluation.
  Model dequantize() const;
  /// \brief Bytes of the stored weights: quantized linears (codes, scales, zeros, g_idx) plus
  /// the fp32 embedding, norms and classifier.
  int64_t weight_bytes() const;
  /// \brief Bytes of the quantized linears alone (what decode streams per token).
  int64_t linear_bytes() const;
  /// \brief Throws `LoadError(file, tensor, …)` if a linear disagrees with the config or the
  /// scheme, or a linear is invalid (`QuantizedLinear::validate`); checks the fp32 tensors too.
  void validate(const std::string& file) const;
};

/// \brief `model` with its linear weight vectors cleared (the `base` of a `QuantizedModel`).
Model strip_linears(const Model& model);

}  // namespace nanoserve::quant
