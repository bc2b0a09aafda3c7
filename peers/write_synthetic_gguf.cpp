// write_synthetic_gguf: the F32 input of make_gguf_fixtures.sh — a synthetic Llama whose rows
// are multiples of 256 (so llama.cpp's K-quants apply to every matrix), written by nanoserve's
// GGUF writer with stories260K's vocabulary (so llama.cpp can also run it).
//
//   usage: write_synthetic_gguf STORIES260K.gguf OUT.gguf
#include <cstdio>
#include <exception>
#include <fstream>

#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/synthetic_model.h"

int main(int argc, char** argv) {
  using namespace nanoserve;
  if (argc != 3) {
    std::fprintf(stderr, "usage: write_synthetic_gguf STORIES260K.gguf OUT.gguf\n");
    return 2;
  }
  try {
    const GgufVocabulary vocab = load_gguf_vocabulary(argv[1]);
    ModelConfig c;
    c.name = "synthetic-k256";
    c.dim = 256;
    c.hidden_dim = 512;
    c.n_layers = 1;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 64;
    c.vocab_size = int(vocab.tokens.size());
    c.max_seq_len = 256;
    c.tied_classifier = false;
    const Model m = make_synthetic_model(c, 2026);
    const std::vector<uint8_t> bytes = save_gguf(m, kGgmlTypeF32, &vocab);
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return out ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_synthetic_gguf: %s\n", e.what());
    return 1;
  }
}
