// write_hf_checkpoints: small random Hugging Face checkpoints of each architecture nanoserve
// loads, in the real layout (sharded safetensors + model.safetensors.index.json, config.json as
// transformers reads it), one directory per architecture — the inputs of
// scripts/hf_logits_check.py, which runs nanoserve and transformers on them. Built in the sim
// and cuda builds, so that the GPU machine writes them itself (scripts/gpu_check.sh) instead of
// carrying them. The models: common/loaders/synthetic_hf.h.
//
//   write_hf_checkpoints OUT_DIR [--dtype bf16] [--shards 3]   -> OUT_DIR/{llama,qwen2,mistral}/
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "common/cli/program.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/synthetic_hf.h"

int main(int argc, char** argv) {
  using namespace nanoserve;
  std::string out, dtype = "bf16";
  int shards = 3;
  CLI::App app{"Write a small random Hugging Face checkpoint of each architecture (llama, "
               "qwen2, mistral) into OUT_DIR/<architecture>/"};
  app.add_option("out_dir", out, "folder to write into (created when missing)")->required();
  app.add_option("--dtype", dtype, "storage type of the tensors")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--shards", shards, "safetensors files per checkpoint (save_pretrained's "
                 "max_shard_size split)")->capture_default_str()->check(CLI::Range(1, 16));
  return cli::run_program("write_hf_checkpoints", app, argc, argv, [&] {
    const std::string st_dtype = dtype == "fp32" ? "F32" : dtype == "fp16" ? "F16" : "BF16";
    for (const std::string& arch : synthetic_hf_architectures()) {
      const Model m = make_synthetic_hf_model(arch);
      const std::string dir = out + "/" + arch;
      write_hf_checkpoint(save_hf_sharded(m, st_dtype, shards), dir);
      std::printf("%-8s %s  (%s, %d shards, %d layers, dim %d, vocab %d)\n", arch.c_str(),
                  dir.c_str(), dtype.c_str(), shards, m.config.n_layers, m.config.dim,
                  m.config.vocab_size);
    }
    return 0;
  });
}
