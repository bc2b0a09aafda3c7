// make_fuzz_seeds: writes the seed corpora of the loader fuzzers, fuzz/seeds/<target>/, from a
// tiny synthetic Llama (dim 8, 2 layers, GQA, vocab 16): a few KB per file, every format and
// dtype the loaders accept, so libFuzzer starts from inputs that reach the deepest code. Each
// JSON-reading fuzzer also gets a nesting-heavy seed, deep_*: ~30,000 nested arrays where a
// value belongs (a few hundred thousand overflowed the stack once; the parsers must refuse
// them), and the trace and chat-script fuzzers get small valid inputs.
//
//   usage: make_fuzz_seeds [OUTPUT_DIR]   (default: fuzz/seeds, run from the repository root)
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/llama2c_loader.h"
#include "common/loaders/safetensors_file.h"
#include "common/loaders/synthetic_model.h"
#include "common/quant/quant_io.h"
#include "common/quant/quantize_model.h"
#include "fuzz/hf_sharded_input.h"

namespace {

using namespace nanoserve;

ModelConfig seed_config(bool tied, RopeStyle rope) {
  ModelConfig c;
  c.name = "seed";
  c.dim = 8;
  c.hidden_dim = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.vocab_size = 16;
  c.max_seq_len = 8;
  c.rope_style = rope;
  c.tied_classifier = tied;
  return c;
}

GgufVocabulary seed_vocab() {
  GgufVocabulary v;
  v.model = "llama";
  const char* pieces[16] = {"<unk>",
                            "<s>",
                            "</s>",
                            "<0x00>",
                            "\xE2\x96\x81"
                            "a",
                            "b",
                            "c",
                            "d",
                            "\xE2\x96\x81"
                            "the",
                            "e",
                            "f",
                            "g",
                            "h",
                            "i",
                            "j",
                            "k"};
  for (int i = 0; i < 16; ++i) {
    v.tokens.push_back(pieces[i]);
    v.scores.push_back(-float(i));
    v.token_types.push_back(i == 0   ? GgufTokenType::kUnknown
                            : i < 3  ? GgufTokenType::kControl
                            : i == 3 ? GgufTokenType::kByte
                                     : GgufTokenType::kNormal);
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return v;
}

/// `n` nested empty arrays: "[[[...]]]", 2n bytes.
std::string deep(int n) { return std::string(size_t(n), '[') + std::string(size_t(n), ']'); }

/// Fits the fuzzers' -max_len of 65536 bytes with room for the text around it.
constexpr int kDeepNesting = 30000;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

void write(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  std::printf("%8zu  %s\n", bytes.size(), path.string().c_str());
}

/// The safetensors fuzzer's input format: config text, NUL, safetensors bytes.
std::vector<uint8_t> hf_input(const HfCheckpoint& c) {
  std::vector<uint8_t> out(c.config_json.begin(), c.config_json.end());
  out.push_back(0);
  out.insert(out.end(), c.safetensors.begin(), c.safetensors.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::filesystem::path root = argc > 1 ? argv[1] : "fuzz/seeds";
    const Model tied = make_synthetic_model(seed_config(true, RopeStyle::kAdjacentPairs), 1);
    const Model untied = make_synthetic_model(seed_config(false, RopeStyle::kAdjacentPairs), 2);
    write(root / "llama2c_bin" / "tied.bin", save_llama2c(tied));
    write(root / "llama2c_bin" / "untied.bin", save_llama2c(untied));

    const GgufVocabulary vocab = seed_vocab();
    write(root / "gguf" / "f32_vocab.gguf", save_gguf(tied, kGgmlTypeF32, &vocab));
    write(root / "gguf" / "f16_untied_vocab.gguf", save_gguf(untied, kGgmlTypeF16, &vocab));
    write(root / "gguf" / "bf16_no_vocab.gguf", save_gguf(tied, kGgmlTypeBF16));

    const Model hf_tied = make_synthetic_model(seed_config(true, RopeStyle::kRotateHalf), 3);
    const Model hf_untied = make_synthetic_model(seed_config(false, RopeStyle::kRotateHalf), 4);
    write(root / "safetensors" / "f32_tied.bin", hf_input(save_hf(hf_tied, "F32")));
    write(root / "safetensors" / "f16_untied.bin", hf_input(save_hf(hf_untied, "F16")));
    write(root / "safetensors" / "bf16_tied.bin", hf_input(save_hf(hf_tied, "BF16")));
    // TinyStories-656K's layout: only lm_head.weight stored, the embedding as a metadata alias.
    HfCheckpoint alias = save_hf(hf_tied, "F32");
    const SafetensorsFile f =
        parse_safetensors(alias.safetensors.data(), alias.safetensors.size(), "s");
    std::vector<SafetensorsEntry> entries;
    for (const SafetensorsTensor& t : f.tensors) {
      const uint8_t* p = f.tensor_data(t);
      entries.push_back({t.name == "model.embed_tokens.weight" ? "lm_head.weight" : t.name,
                         t.dtype->name, t.shape, std::vector<uint8_t>(p, p + (t.end - t.begin))});
    }
    alias.safetensors = save_safetensors(
        entries, {{"format", "pt"}, {"model.embed_tokens.weight", "lm_head.weight"}});
    write(root / "safetensors" / "f32_lm_head_alias.bin", hf_input(alias));

    // Sharded checkpoints (fuzz_hf_sharded): each family with its features, two bf16 shards.
    {
      Model qwen = hf_tied;
      qwen.config.architecture = "qwen2";
      qwen.config.attention_bias = true;
      qwen.config.rope_theta = 1e6f;
      for (LayerWeights& w : qwen.layers) {
        w.bq.assign(size_t(qwen.config.q_dim()), 0.25f);
        w.bk.assign(size_t(qwen.config.kv_dim()), -0.5f);
        w.bv.assign(size_t(qwen.config.kv_dim()), 0.125f);
      }
      Model llama3 = hf_untied;
      llama3.config.rope_scaling = {RopeScalingType::kLlama3, 8.0f, 1.0f, 4.0f, 4};
      Model mistral = hf_untied;
      mistral.config.architecture = "mistral";
      write(root / "hf_sharded" / "qwen2_bf16.bin", fuzz::sharded_input(save_hf_sharded(qwen, "BF16", 2)));
      write(root / "hf_sharded" / "llama3_scaling_bf16.bin",
            fuzz::sharded_input(save_hf_sharded(llama3, "BF16", 2)));
      write(root / "hf_sharded" / "mistral_f16.bin",
            fuzz::sharded_input(save_hf_sharded(mistral, "F16", 2)));
    }

    // Nesting where values belong: a tensor's shape in the safetensors header (after a good
    // config.json) and config.json's model_type.
    const std::string header =
        "{\"w\":{\"dtype\":\"F32\",\"shape\":" + deep(kDeepNesting) + ",\"data_offsets\":[0,4]}}";
    std::vector<uint8_t> st;
    for (int i = 0; i < 8; ++i) st.push_back(uint8_t(uint64_t(header.size()) >> (8 * i)));
    st.insert(st.end(), header.begin(), header.end());
    st.insert(st.end(), 4, 0);
    HfCheckpoint deep_shape = save_hf(hf_tied, "F32");
    deep_shape.safetensors = st;
    write(root / "safetensors" / "deep_shape.bin", hf_input(deep_shape));
    HfCheckpoint deep_config = save_hf(hf_tied, "F32");
    // Shallower than the others: the safetensors bytes after it must fit -max_len too.
    deep_config.config_json = "{\"model_type\": " + deep(kDeepNesting - 2500) + "}";
    write(root / "safetensors" / "deep_config.bin", hf_input(deep_config));
    write(root / "tokenizer_hf" / "deep_dropout.json",
          bytes_of("{\"model\": {\"type\": \"BPE\", \"dropout\": " + deep(kDeepNesting) +
                   ", \"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": \"a\"}}"));

    // Traces (fuzz_trace): both prompt forms with a temperature, and a nested field.
    write(root / "trace" / "two_requests.jsonl",
          bytes_of("{\"arrival_s\":0.0,\"prompt_len\":13,\"max_tokens\":78,\"seed\":8234988}\n"
                   "\n"
                   "{\"arrival_s\":0.59,\"prompt\":\"Once upon a time\",\"max_tokens\":8,"
                   "\"seed\":5,\"temperature\":0.8}\n"));
    write(root / "trace" / "deep_field.jsonl",
          bytes_of("{\"arrival_s\": " + deep(kDeepNesting) +
                   ", \"prompt_len\": 4, \"max_tokens\": 2, \"seed\": 1}\n"));

    // Chat scripts (fuzz_chat_script): comments, blank lines, two sessions.
    write(root / "chat_script" / "two_sessions.txt",
          bytes_of("# a comment\nsystem: You tell short stories.\n\nsession: lily\n"
                   "user: Tell me a story about Lily.\nuser: What happened next?\n"
                   "session: tom\nuser: A story about a dog named Tom.\n"));

    // Quantized models (NSQM): RTN INT8 per channel, and GPTQ INT4 g4 asymmetric act-order
    // (zero points and g_idx present).
    quant::QuantizeOptions q;
    q.scheme = {8, 0, true};
    write(root / "quantized_model" / "int8_ch_sym.nsqm",
          quant::serialize_quantized_model(quant::quantize_model(tied, {}, q)));
    q.method = quant::QuantMethod::kGptq;
    q.scheme = {4, 4, false};
    q.gptq.act_order = true;
    write(root / "quantized_model" / "int4_g4_asym_act_order.nsqm",
          quant::serialize_quantized_model(quant::quantize_model(untied, {{1, 5, 9, 3, 7, 2}}, q)));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_fuzz_seeds: error: %s\n", e.what());
    return 1;
  }
}
