// nanoserve info: what a model is — shape, parameters, weight bytes, KV bytes per token.
#include <cstdio>
#include <memory>
#include <string>

#include "apps/nanoserve/commands.h"
#include "common/format_bytes.h"
#include "common/loaders/model_loader.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"

namespace nanoserve::cli {

namespace {

int run_info(const std::string& spec) {
  std::string path;
  const ModelFormat format = detect_model_format(spec, &path);
  // Synthetic configs are described without generating weights (7B-70B shapes have none here).
  const ModelConfig c = format == ModelFormat::kSynthetic
                            ? synthetic_config(spec.substr(spec.find(':') + 1))
                            : load_model(spec).config;
  std::printf("model           %s (%s)\n", spec.c_str(), to_string(format));
  std::printf("dim             %d\nhidden_dim      %d\nn_layers        %d\n", c.dim, c.hidden_dim,
              c.n_layers);
  std::printf("n_heads         %d\nn_kv_heads      %d (%s)\nhead_dim        %d\n", c.n_heads,
              c.n_kv_heads, c.n_kv_heads == c.n_heads ? "MHA" : "GQA", c.head_dim);
  std::printf("vocab_size      %d\nmax_seq_len     %d\nrope            theta %g, %s\n",
              c.vocab_size, c.max_seq_len, c.rope_theta, to_string(c.rope_style));
  std::printf("norm_eps        %g\nclassifier      %s\n", c.norm_eps,
              c.tied_classifier ? "tied to the embedding" : "separate");
  const auto params = static_cast<double>(c.param_count());
  std::printf("parameters      %.0f (%.2f %s)\n", params, params >= 1e9 ? params / 1e9 : params / 1e6,
              params >= 1e9 ? "B" : "M");
  std::printf("weights         fp32 %s, fp16 %s\n", format_bytes(params * 4).c_str(),
              format_bytes(params * 2).c_str());
  std::printf("KV per token    fp32 %s, fp16 %s   (2 x %d layers x %d kv heads x %d x bytes)\n",
              format_bytes(double(c.kv_bytes_per_token(4))).c_str(),
              format_bytes(double(c.kv_bytes_per_token(2))).c_str(), c.n_layers, c.n_kv_heads,
              c.head_dim);
  std::printf("KV full context fp16 %s for %d tokens\n",
              format_bytes(double(c.kv_bytes_per_token(2)) * c.max_seq_len).c_str(),
              c.max_seq_len);
  return 0;
}
}  // namespace

Action add_info(CLI::App& parent) {
  auto spec = std::make_shared<std::string>(default_model_spec());
  CLI::App* c = parent.add_subcommand("info", "Describe a model: shape, size, KV bytes per token");
  c->add_option("--model,-m", *spec, "model file, directory or synthetic:<name>")
      ->capture_default_str();
  return [spec] { return run_info(*spec); };
}

}  // namespace nanoserve::cli
