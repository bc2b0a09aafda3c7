#pragma once
/// \file
/// \brief One row of chapter 5's table: a model's linears quantized one way (or left dense),
/// then measured — perplexity and bits-per-byte on the evaluation slice, mean next-token KL
/// divergence against fp32, weight bytes, and decode speed through the kernels.

#include <cstdint>
#include <string>
#include <vector>

#include "chapters/ch05_quantization/decode_probe.h"
#include "common/model_bundle.h"
#include "common/quant/calibration.h"
#include "common/quant/quantize_model.h"

namespace nanoserve::ch05 {

/// \brief How much of the data a run uses (the tour uses less).
struct DataOptions {
  int eval_docs = 80;      ///< documents 0..eval_docs-1 score perplexity (the evaluation slice)
  int kl_docs = 10;        ///< documents 0..kl_docs-1 (cut to 256 tokens) score KL
  int calib_docs = 20;     ///< documents 80..80+calib_docs-1 calibrate GPTQ and AWQ
  int decode_steps = 16;   ///< greedy tokens generated through the kernels per row
  bool check = false;      ///< run the oracle alongside the kernels' decode
  /// \brief The quantized rows' activations and non-quantized weights on the device (`--dtype`:
  /// fp16/bf16 make the kernels true W8A16/W4A16); the dense rows keep their own type.
  DType dtype = DType::kF32;
  DType kv_dtype = DType::kF32;  ///< the quantized rows' KV cache (`--kv-dtype`)
  std::uint64_t seed = 42;  ///< seeds the random token sequences used without the text sample
};

/// \brief A model with the data every row of its table is measured on.
struct ModelData {
  ModelBundle bundle;                           ///< fp32 model + tokenizer
  std::string name;                             ///< file name, for tables
  bool has_text = false;                        ///< the TinyStories sample was found
  std::string text;                             ///< the whole sample (empty without it)
  std::vector<std::vector<int>> calibration;    ///< GPTQ/AWQ inputs
  std::vector<std::vector<int>> kl_sequences;   ///< KL inputs
  std::vector<int> prompt;                      ///< decode prompt
  std::string calibration_note;                 ///< where `calibration` came from
  std::string eval_note;                        ///< where perplexity and KL came from
};

/// \brief Loads `spec` and cuts its data: calibration from documents 80.. of the sample, KL and
/// perplexity from documents 0.. (never overlapping); without the sample, seeded random token
/// sequences (and no perplexity), said in the notes.
ModelData load_model_data(const std::string& spec, const DataOptions& o);

/// \brief One configuration of the table.
struct SweepConfig {
  std::string method;        ///< "fp32", "fp16" (dense), "rtn", "gptq" or "awq"
  quant::QuantScheme scheme; ///< for the quantized methods
  bool act_order = false;    ///< GPTQ act-order
  /// \brief e.g. "int4-g128-sym", "int4-g128-sym+act", "fp32".
  std::string format() const;
};

/// \brief The measurements of one configuration.
struct SweepRow {
  SweepConfig config;         ///< what was measured
  double perplexity = 0;      ///< on the evaluation documents (NaN without the text sample)
  double bits_per_byte = 0;   ///< same documents (NaN without the text sample)
  double kl = 0;              ///< mean KL(fp32 ‖ this) per position, nats
  std::int64_t linear_bytes = 0;  ///< the seven linears of every block, as stored
  std::int64_t weight_bytes = 0;  ///< linears + embedding/classifier/norms (fp32 unless fp16)
  double bits_per_weight = 0;     ///< stored bits per linear weight (scales, zeros included)
  double quantize_seconds = 0;    ///< CPU time of the quantization (0 for dense)
  std::vector<quant::AwqLayerReport> awq;  ///< AWQ's choices per block (AWQ rows only)
  DecodeRun decode;               ///< greedy decode through the kernels
};

/// \brief Builds and measures `config` on `data` (quantizing with `quantize_model`); the fp32
/// model is the KL reference.
SweepRow measure(const ModelData& data, const SweepConfig& config, const DataOptions& o);

}  // namespace nanoserve::ch05
