#include "apps/nanoserve/model_source.h"

#include <filesystem>

#include "common/engine/model/device_info.h"
#include "common/engine/model/gguf_device_model.h"
#include "common/engine/model/quantized_bundle.h"
#include "common/error.h"
#include "common/engine/model/quantized_device_model.h"
#include "common/error.h"
#include "common/loaders/model_loader.h"
#include "common/model_bundle.h"

namespace nanoserve::cli {

DType kv_dtype_or(const std::string& kv_dtype, DType activation) {
  return kv_dtype.empty() ? activation : parse_dtype(kv_dtype);
}

DType device_dtype_or_default(const std::string& dtype) {
  return parse_dtype(dtype.empty() ? engine::default_dtype() : dtype);
}

void check_cpu_dtypes(const std::string& dtype, const std::string& kv_dtype) {
  for (const std::string* d : {&dtype, &kv_dtype}) {
    if (!d->empty() && *d != "fp32") {
      throw InvalidArgument(std::string(d == &dtype ? "--dtype " : "--kv-dtype ") + *d +
                            " needs --device gpu (the CPU oracle is fp32)");
    }
  }
}

std::unique_ptr<engine::DeviceModel> ModelSource::to_device(DType dtype) const {
  if (quantized) {
    return std::make_unique<engine::DeviceModel>(engine::make_quantized_device_model(*quantized, dtype));
  }
  if (gguf) return std::make_unique<engine::DeviceModel>(engine::make_gguf_device_model(*gguf, dtype));
  if (streamed) {
    const std::shared_ptr<const HfCheckpointReader> r = streamed;
    return std::make_unique<engine::DeviceModel>(
        r->config(), dtype,
        [r](const std::string& name, int layer, std::size_t offset, std::size_t count) {
          return r->read(name, layer, offset, count);
        });
  }
  return std::make_unique<engine::DeviceModel>(model, dtype);
}

ModelSource load_model_source(const std::string& model_spec, const std::string& tokenizer_spec,
                              bool device_only) {
  ModelSource s;
  std::string path;
  const ModelFormat format = device_only && !engine::is_quantized_model_file(model_spec)
                                 ? detect_model_format(model_spec, &path)
                                 : ModelFormat::kSynthetic;
  if (format == ModelFormat::kHuggingFace || format == ModelFormat::kGguf) {
    if (format == ModelFormat::kGguf) {
      s.gguf = std::make_shared<const GgufCheckpointReader>(path);
      s.model.config = s.gguf->config();
    } else {
      s.streamed = std::make_shared<const HfCheckpointReader>(path);
      s.model.config = s.streamed->config();
    }
    s.model.source = path;
    TokenizerBundle t = load_model_tokenizer(model_spec, tokenizer_spec);
    if (t.tokenizer->vocab_size() > s.model.config.vocab_size) {
      throw LoadError(t.tokenizer_path, "vocab_size",
                      std::to_string(t.tokenizer->vocab_size()) + " tokens do not fit the model's " +
                          std::to_string(s.model.config.vocab_size) + " embedding rows");
    }
    s.tokenizer = std::move(t.tokenizer);
    s.tokenizer_path = t.tokenizer_path;
    s.chat_template = t.chat_template;
    s.description = path;
    return s;
  }
  if (engine::is_quantized_model_file(model_spec)) {
    engine::QuantizedBundle b = engine::load_quantized_bundle(model_spec, tokenizer_spec);
    s.model = b.model.dequantize();
    s.model.source = b.model_path;
    s.tokenizer = std::move(b.tokenizer);
    s.tokenizer_path = b.tokenizer_path;
    s.description = b.model_path + " (" + quant::to_string(b.model.method) + " " +
                    b.model.scheme.label() + " of " +
                    std::filesystem::path(b.model.base.config.name).filename().string() + ")";
    s.quantized = std::move(b.model);
    return s;
  }
  ModelBundle b = load_model_bundle(model_spec, tokenizer_spec);
  s.model = std::move(b.model);
  s.tokenizer = std::move(b.tokenizer);
  s.tokenizer_path = b.tokenizer_path;
  s.chat_template = b.chat_template;
  s.description = s.model.source;
  return s;
}

}  // namespace nanoserve::cli
