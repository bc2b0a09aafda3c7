#include "chapters/ch05_quantization/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>

#include "common/data_path.h"
#include "common/engine/model/check_tolerance.h"
#include "common/engine/model/quantized_device_model.h"
#include "chapters/ch05_quantization/quantized_memory.h"
#include "common/eval/documents.h"
#include "common/harness/clocks.h"
#include "common/quant/quant_metrics.h"
#include "common/sampling/rng.h"
#include "common/tolerances.h"

namespace nanoserve::ch05 {

namespace {

constexpr const char* kTextSample = "tinystories_valid_sample.txt";
constexpr const char* kPrompt = "Once upon a time";

/// `count` seeded random token sequences of `length` tokens (BOS first): the stand-in for text
/// when the sample is absent (synthetic models only produce noise on it anyway).
std::vector<std::vector<int>> random_sequences(std::uint64_t seed, int count, int length, int vocab, int bos) {
  std::vector<std::vector<int>> seqs(static_cast<std::size_t>(count));
  for (int s = 0; s < count; ++s) {
    std::vector<int>& seq = seqs[static_cast<std::size_t>(s)];
    seq.push_back(bos);
    for (int t = 1; t < length; ++t) {
      const auto bits = random_bits(seed, std::uint64_t(s) * 4096 + std::uint64_t(t), RngStream::kWorkload);
      seq.push_back(int(bits[0] % std::uint32_t(vocab)));
    }
  }
  return seqs;
}

}  // namespace

std::string SweepConfig::format() const {
  if (method == "fp32" || method == "fp16") return method;
  return scheme.label() + (act_order ? "+act" : "");
}

ModelData load_model_data(const std::string& spec, const DataOptions& o) {
  ModelData d;
  d.bundle = load_model_bundle(spec);
  const Tokenizer& tok = *d.bundle.tokenizer;
  d.name = d.bundle.format == ModelFormat::kSynthetic
               ? spec
               : std::filesystem::path(d.bundle.model.source).filename().string();
  const quant::DocumentRange calib{quant::kCalibrationDocuments.first, o.calib_docs};
  const int context = d.bundle.model.config.max_seq_len;
  const int max_tokens = std::min(quant::kCalibrationMaxTokens, context);
  if (const std::optional<std::string> path = find_data_file(kTextSample)) {
    d.has_text = true;
    d.text = eval::read_text_file(*path);
    d.calibration = quant::calibration_sequences(quant::select_documents(d.text, calib), tok, max_tokens);
    d.kl_sequences =
        quant::calibration_sequences(quant::select_documents(d.text, {0, o.kl_docs}), tok, max_tokens);
    d.calibration_note = "documents " + std::to_string(calib.first) + ".." +
                         std::to_string(calib.first + calib.count - 1) + " of " + kTextSample;
    d.eval_note = "perplexity on documents 0.." + std::to_string(o.eval_docs - 1) +
                  ", KL on documents 0.." + std::to_string(o.kl_docs - 1) +
                  " (cut to " + std::to_string(max_tokens) + " tokens)";
  } else {
    const int vocab = d.bundle.model.config.vocab_size, bos = tok.bos_id();
    d.calibration = random_sequences(o.seed, o.calib_docs, std::min(64, context), vocab, bos);
    d.kl_sequences = random_sequences(o.seed + 1, o.kl_docs, std::min(64, context), vocab, bos);
    d.calibration_note = std::to_string(o.calib_docs) + " random token sequences (no " +
                         kTextSample + " found)";
    d.eval_note = "KL on " + std::to_string(o.kl_docs) +
                  " other random token sequences; no perplexity without the text sample";
  }
  d.prompt = tok.encode(kPrompt, /*add_bos=*/true, /*add_eos=*/false);
  return d;
}

SweepRow measure(const ModelData& data, const SweepConfig& config, const DataOptions& o) {
  SweepRow row;
  row.config = config;
  const Model& fp = data.bundle.model;
  const ModelConfig& c = fp.config;
  Model reference;  // the fp32 weights this row's kernels compute with (the oracle's model)
  std::unique_ptr<engine::DeviceModel> device;
  Tolerance tolerance = tol::kQuantizedKernelForward;
  DType kv_dtype = DType::kF32;
  ch05::WeightBytes bytes;
  if (config.method == "fp32" || config.method == "fp16") {
    const DType dtype = config.method == "fp32" ? DType::kF32 : DType::kF16;
    reference = engine::round_weights(fp, dtype);
    device = std::make_unique<engine::DeviceModel>(fp, dtype);
    bytes = ch05::dense_weight_bytes(c, dtype_bytes(dtype));
    if (dtype == DType::kF16) tolerance = tol::kKernelForwardFp16;  // fp16 KV cache too
    kv_dtype = dtype;
  } else {
    quant::QuantizeOptions qo;
    qo.method = quant::parse_quant_method(config.method);
    qo.scheme = config.scheme;
    qo.gptq.act_order = config.act_order;
    quant::QuantizeReport report;
    const double start = 1e3 * harness::process_cpu_seconds();  // CPU time: robust to other load on a shared machine
    const quant::QuantizedModel q = quant::quantize_model(fp, data.calibration, qo, &report);
    row.quantize_seconds = 1e-3 * (1e3 * harness::process_cpu_seconds() - start);
    row.awq = report.awq;
    reference = engine::quantized_oracle_model(q, o.dtype);
    device = std::make_unique<engine::DeviceModel>(engine::make_quantized_device_model(q, o.dtype));
    kv_dtype = o.kv_dtype;
    if (o.dtype != DType::kF32 || o.kv_dtype != DType::kF32) {
      tolerance = engine::check_tolerance(o.dtype, o.kv_dtype);
    }
    bytes = ch05::dense_weight_bytes(c, 4);  // for the weight count
    bytes.linears = q.linear_bytes();
    bytes.rest = q.weight_bytes() - q.linear_bytes();
  }
  row.linear_bytes = bytes.linears;
  row.weight_bytes = bytes.total();
  row.bits_per_weight = bytes.bits_per_linear_weight();
  row.kl = config.method == "fp32" ? 0.0 : quant::mean_kl_divergence(fp, reference, data.kl_sequences);
  if (data.has_text) {
    eval::EvalOptions window;  // the default 512 positions, or the model's whole context
    window.window = std::min(window.window, c.max_seq_len);
    const eval::EvalResult r =
        quant::evaluate_documents(reference, *data.bundle.tokenizer, data.text, {0, o.eval_docs}, window);
    row.perplexity = r.perplexity;
    row.bits_per_byte = r.bits_per_byte;
  } else {
    row.perplexity = row.bits_per_byte = std::numeric_limits<double>::quiet_NaN();
  }
  // The KV the decode needs (prompt + steps), not the context the model's file claims.
  const int positions = static_cast<int>(std::min<std::int64_t>(
      c.max_seq_len, std::int64_t(data.prompt.size()) + o.decode_steps));
  row.decode = measure_decode(*device, data.prompt, o.decode_steps, positions, kv_dtype,
                              o.check ? &reference : nullptr, tolerance);
  return row;
}

}  // namespace nanoserve::ch05
