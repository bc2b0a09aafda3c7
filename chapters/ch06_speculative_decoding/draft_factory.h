#pragma once
/// \file
/// \brief The draft factory of chapter 6: from a target model and a short name, a ready
/// `Proposer` that drafts through the kernels — the one place that decides how a draft is
/// built, so a better implementation of one kind replaces one function:
///
///     "layers-K"                first K blocks of the target + its final norm and classifier
///                               (speculative::first_layers), fp32 DeviceModel, own paged KV
///     "int8-rtn"                the target quantized by chapter 5's code (INT8 per channel, or
///     "int4-rtn|gptq|awq"       INT4 groups of 32, symmetric), run on chapter 5's quantized
///                               linears (`QuantizedDeviceLinear`: the W8A16/W4A16 kernels)
///     "ngram"                   prompt lookup, no model (speculative::NgramProposer)
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/model/device_model.h"
#include "common/engine/decode/paged_decoder.h"
#include "common/model.h"
#include "common/quant/quantize_model.h"
#include "common/speculative/proposer.h"

namespace nanoserve::ch06 {

/// \brief How a draft is made.
enum class DraftKind {
  kLayerTruncated,  ///< the target's first k blocks (early exit)
  kQuantized,       ///< the target's INT8/INT4 copy
  kNgram,           ///< prompt lookup, no model
};

/// \brief A parsed draft name.
struct DraftSpec {
  std::string name;               ///< as given: "layers-2", "int4-gptq", "ngram", …
  DraftKind kind = DraftKind::kNgram;  ///< which factory branch builds it
  int layers = 0;                 ///< kLayerTruncated: blocks kept
  quant::QuantizeOptions quant;   ///< kQuantized: method and scheme
};

/// \brief Parses "layers-K" (K >= 1), "int8-rtn", "int4-rtn", "int4-gptq", "int4-awq" or
/// "ngram". INT8 is per channel, INT4 uses groups of 32, both symmetric (stories260K's rows
/// are 64 or 172 wide, so 128-wide groups would be whole rows). Throws `InvalidArgument`
/// naming the value and the accepted forms.
DraftSpec parse_draft_spec(const std::string& name);

/// \brief The chapter's drafts for a target with `n_layers` blocks: layers-1 .. layers-(n-1)
/// (at most three of them: 1, n/2, n-1), int8-rtn, int4-rtn, int4-gptq, int4-awq, ngram.
std::vector<std::string> default_draft_names(int n_layers);

/// \brief A draft ready to propose through the kernels.
struct KernelDraft {
  std::string label;          ///< e.g. "layers-2", "int4-gptq (dequantized)", "ngram"
  std::string weights;        ///< what the device runs, e.g. "fp32 of int4-g32-sym-gptq"
  bool dequantized = false;   ///< a quantized draft running dequantized fp32 weights
  /// \brief Bytes of the draft's weights in its own format (packed when quantized; 0 for
  /// n-gram): what a bandwidth-bound decode step would stream.
  std::int64_t weight_bytes = 0;
  /// \brief The fp32 weights the device runs, on the host (for the oracle; empty for n-gram).
  Model host_model;
  std::unique_ptr<engine::PagedDecoder> model;      ///< the draft model's backend (null: n-gram)
  std::unique_ptr<speculative::Proposer> proposer;   ///< drafts with `model`, or the n-gram lookup
};

/// \brief The device model a quantized draft runs: `make_quantized_device_model(q, dtype)`
/// (`*dequantized` set to false; a draft that ran the dequantized fp32 weights instead would
/// set it, and its label would say so).
std::unique_ptr<engine::DeviceModel> quantized_device_model(const quant::QuantizedModel& q, DType dtype,
                                                    bool* dequantized);

/// \brief Builds `spec` for `target` (see the file comment). GPTQ and AWQ fit on
/// `calibration` (token sequences; RTN ignores them); the draft's cache holds
/// `options.max_seq_len` positions. Throws `InvalidArgument` for a layer count outside
/// [1, n_layers], missing calibration data, or bad cache sizes.
KernelDraft make_kernel_draft(const Model& target, const DraftSpec& spec,
                              const std::vector<std::vector<int>>& calibration, DType dtype,
                              const engine::PagedDecoderOptions& options);

}  // namespace nanoserve::ch06
