// nanoserve convert: any checkpoint nanoserve loads (llama2.c .bin, Hugging Face directory,
// GGUF) written as the GGUF file llama.cpp would make of it (common/loaders/gguf_export.h).
//
//   nanoserve convert stories260K.bin stories260K.gguf --dtype fp32
//   nanoserve convert data/models/Qwen2.5-0.5B-Instruct qwen.gguf --dtype q8_0
//
// q8_0, q4_0 and q4_k run ggml's reference quantizers (round to nearest) on every 2-D tensor,
// as llama.cpp's `llama-quantize --pure` would; for GPTQ/AWQ codes in GGUF, `nanoserve quantize
// --out FILE.gguf`.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/nanoserve/commands.h"
#include "common/engine/model/quantized_bundle.h"
#include "common/error.h"
#include "common/io/output_file.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_export.h"
#include "common/loaders/model_loader.h"
#include "common/model_bundle.h"

namespace nanoserve::cli {

namespace {
struct ConvertArgs {
  std::string in;
  std::string out;
  std::string dtype = "fp16";
  std::string tokenizer;
};

/// Refuses, before anything is loaded, what cannot become a GGUF file or cannot be written.
void check_convert_args(const ConvertArgs& a) {
  parse_gguf_dtype(a.dtype);
  namespace fs = std::filesystem;
  if (fs::is_directory(a.out)) throw InvalidArgument(a.out + ": is a directory, not a file path");
  const fs::path parent = fs::path(a.out).has_parent_path() ? fs::path(a.out).parent_path() : ".";
  if (!fs::is_directory(parent)) {
    throw InvalidArgument(a.out + ": cannot write: the folder " + parent.string() + " does not exist");
  }
  if (access(parent.c_str(), W_OK) != 0) {
    throw InvalidArgument(a.out + ": cannot write: the folder " + parent.string() +
                          " is not writable");
  }
  if (engine::is_quantized_model_file(a.in)) {
    throw InvalidArgument(a.in + ": NSQM files (nanoserve quantize) cannot be converted; "
                          "convert the model they were quantized from");
  }
  if (detect_model_format(a.in, nullptr) == ModelFormat::kSynthetic) {
    throw InvalidArgument(a.in + ": a synthetic model has random weights and no real tokenizer; "
                          "convert a checkpoint (llama2.c .bin, Hugging Face directory, GGUF)");
  }
}

int run_convert(const ConvertArgs& a) {
  check_convert_args(a);
  const uint32_t type = parse_gguf_dtype(a.dtype);
  const ModelBundle b = load_model_bundle(a.in, a.tokenizer);
  const GgufVocabulary vocab =
      gguf_vocabulary_of(*b.tokenizer, b.model.config.vocab_size, b.chat_template, a.in);
  const std::vector<uint8_t> bytes = export_gguf(b.model, vocab, type);
  write_output_file(a.out, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  const ModelConfig& c = b.model.config;
  std::printf("model          %s (%s, %s)\n", b.model.source.c_str(), to_string(b.format),
              c.architecture.c_str());
  std::printf("tokenizer      %s -> tokenizer.ggml.model %s%s%s (%zu tokens)\n",
              b.tokenizer_path.c_str(), vocab.model.c_str(), vocab.pre.empty() ? "" : ", pre ",
              vocab.pre.c_str(), vocab.tokens.size());
  const char* fallback = type == kGgmlTypeQ4_K ? " (rows not a multiple of 256: Q5_0, of 32: F16)"
                         : type == kGgmlTypeQ8_0 || type == kGgmlTypeQ4_0
                             ? " (rows not a multiple of 32: F16)"
                             : "";
  std::printf("tensors        2-D %s%s, 1-D F32\n", a.dtype.c_str(), fallback);
  std::printf("wrote          %s (%zu bytes)\n", a.out.c_str(), bytes.size());
  return 0;
}
}  // namespace

Action add_convert(CLI::App& parent) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* c = parent.add_subcommand(
      "convert", "Write a checkpoint (llama2.c .bin, HF directory, GGUF) as a llama.cpp GGUF file");
  c->add_option("in", args->in, "model file or directory (as --model takes it)")->required();
  c->add_option("out", args->out, "the GGUF file to write")->required();
  c->add_option("--dtype", args->dtype, "2-D tensors as fp32, fp16, bf16, q8_0, q4_0 or q4_k (rows that are not whole "
                "blocks fall back as llama.cpp does: q4_k to q5_0, then to f16)")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", args->tokenizer, "tokenizer file (default: found from the model)");
  return [args] { return run_convert(*args); };
}

}  // namespace nanoserve::cli
