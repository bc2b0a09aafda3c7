#include "common/loaders/gguf_export.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/loaders/gguf_writer.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/llama_tokenizer.h"
#include "common/tokenizer/pre_tokenizer.h"

namespace nanoserve {

namespace {

const char* const kSpm = "\xE2\x96\x81";  // "▁", SentencePiece's space
constexpr float kNeverMerged = -1e10f;   // LlamaTokenizer never merges into a piece this low

bool is_byte_piece(const std::string& p) {
  return p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>';
}

std::string spaces_to_spm(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ') {
      out += kSpm;
    } else {
      out += c;
    }
  }
  return out;
}

/// Pads the vocabulary to `n_rows` ids with llama.cpp's `[PADn]` UNUSED tokens.
void pad_to(GgufVocabulary& v, int n_rows, const std::string& source) {
  if (int(v.tokens.size()) > n_rows) {
    throw InvalidArgument(source + ": the tokenizer has " + std::to_string(v.tokens.size()) +
                          " tokens but the model's embedding only " + std::to_string(n_rows) +
                          " rows");
  }
  while (int(v.tokens.size()) < n_rows) {
    v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
    if (!v.scores.empty()) v.scores.push_back(kNeverMerged);
    v.token_types.push_back(GgufTokenType::kUnused);
  }
}

GgufVocabulary from_llama(const LlamaTokenizer& t) {
  GgufVocabulary v;
  v.model = "llama";
  for (int id = 0; id < t.vocab_size(); ++id) {
    std::string p = t.piece(id);
    // llama2.c's export writes BOS/EOS as "\n<s>\n" / "\n</s>\n"; llama.cpp's converter
    // (convert-llama2c-to-ggml) stores them as "<s>" / "</s>".
    const bool special = id == t.unk_id() || id == t.bos_id() || id == t.eos_id();
    if (special && p.size() > 2 && p.front() == '\n' && p.back() == '\n') p = p.substr(1, p.size() - 2);
    v.tokens.push_back(spaces_to_spm(p));
    v.scores.push_back(t.score(id));
    v.token_types.push_back(id == t.unk_id()                          ? GgufTokenType::kUnknown
                            : id == t.bos_id() || id == t.eos_id()    ? GgufTokenType::kControl
                            : is_byte_piece(p)                        ? GgufTokenType::kByte
                                                                      : GgufTokenType::kNormal);
  }
  v.bos_id = t.bos_id();
  v.eos_id = t.eos_id();
  v.unk_id = t.unk_id();
  return v;
}

/// The llama.cpp name of a byte-level pre-tokenizer: the one whose steps (kinds and regexes)
/// `gguf_pre_tokenizer` builds equal to `steps`.
std::string pre_name(const HfBpeSpec& spec, const std::string& source) {
  for (const char* name : {"llama-bpe", "qwen2", "smollm", "gpt2"}) {
    const std::vector<HfPreTokenizerStep> known = gguf_pre_tokenizer(name);
    bool same = known.size() == spec.pre_tokenizer.size();
    for (size_t i = 0; same && i < known.size(); ++i) {
      const HfPreTokenizerStep &a = known[i], &b = spec.pre_tokenizer[i];
      same = a.kind == b.kind && (a.regex == nullptr) == (b.regex == nullptr) &&
             (a.regex == nullptr || a.regex->pattern() == b.regex->pattern());
    }
    if (same) return name;
  }
  throw InvalidArgument(source + ": its tokenizer.json pre-tokenizer matches none of the ones "
                        "llama.cpp names (llama-bpe, qwen2, smollm, gpt2), so GGUF cannot say it");
}

GgufVocabulary from_hf(const HfBpeTokenizer& t, const std::string& source) {
  const HfBpeSpec& s = t.spec();
  GgufVocabulary v;
  std::map<int, const HfAddedToken*> added;
  for (const HfAddedToken& a : s.added_tokens) added[a.id] = &a;
  const int n = t.vocab_size();
  if (s.byte_level) {
    v.model = "gpt2";
    v.pre = pre_name(s, source);
    for (const auto& m : s.merges) v.merges.push_back(s.vocab[m[0]] + " " + s.vocab[m[1]]);
  } else {
    // SentencePiece-style: "llama" with the merge ranks as scores (see the file comment).
    if (!s.byte_fallback) {
      throw InvalidArgument(source + ": a tokenizer.json without byte_fallback is neither "
                            "SentencePiece-style nor byte-level; GGUF cannot describe it");
    }
    v.model = "llama";
    v.scores.assign(size_t(n), kNeverMerged);
    for (size_t rank = s.merges.size(); rank-- > 0;) {
      v.scores[size_t(s.merges[rank][2])] = -float(rank + 1);
    }
    v.unk_id = s.unk_id;
  }
  for (int id = 0; id < n; ++id) {
    const auto a = added.find(id);
    std::string piece = s.vocab[size_t(id)];
    if (piece.empty() && a != added.end()) piece = a->second->content;
    GgufTokenType type = GgufTokenType::kNormal;
    if (piece.empty()) {
      piece = "[PAD" + std::to_string(id) + "]";
      type = GgufTokenType::kUnused;
    } else if (id == s.unk_id && !s.byte_level) {
      type = GgufTokenType::kUnknown;
    } else if (a != added.end()) {
      // SentencePiece vocabularies have no user-defined tokens nanoserve reads: control.
      type = a->second->special || !s.byte_level ? GgufTokenType::kControl
                                                 : GgufTokenType::kUserDefined;
    } else if (!s.byte_level && is_byte_piece(piece)) {
      type = GgufTokenType::kByte;
    }
    v.tokens.push_back(std::move(piece));
    v.token_types.push_back(type);
  }
  v.bos_id = s.bos_id;
  v.eos_id = s.eos_id;
  return v;
}

}  // namespace

uint32_t parse_gguf_dtype(const std::string& name) {
  if (name == "fp32") return kGgmlTypeF32;
  if (name == "fp16") return kGgmlTypeF16;
  if (name == "bf16") return kGgmlTypeBF16;
  if (name == "q8_0") return kGgmlTypeQ8_0;
  if (name == "q4_0") return kGgmlTypeQ4_0;
  if (name == "q4_k") return kGgmlTypeQ4_K;
  throw InvalidArgument("--dtype '" + name + "' is not one of fp32, fp16, bf16, q8_0, q4_0, q4_k");
}

uint32_t gguf_row_type(uint32_t ggml_type, uint64_t row_length) {
  if (ggml_type == kGgmlTypeQ4_K && row_length % kGgmlBlockK != 0) ggml_type = kGgmlTypeQ5_0;
  const bool blocks32 = ggml_type == kGgmlTypeQ8_0 || ggml_type == kGgmlTypeQ4_0 ||
                        ggml_type == kGgmlTypeQ5_0;
  if (blocks32 && row_length % kGgmlBlock32 != 0) return kGgmlTypeF16;
  return ggml_type;
}

int gguf_source_row(int file_row, int head_dim) {
  const int h = file_row / head_dim, i = file_row % head_dim;
  return h * head_dim + (i % 2) * (head_dim / 2) + i / 2;
}

bool gguf_permutes_qk(const ModelConfig& c) {
  return c.architecture == "llama" && c.rope_style == RopeStyle::kRotateHalf;
}

GgufVocabulary gguf_vocabulary_of(const Tokenizer& tokenizer, int n_rows,
                                  const std::string& chat_template, const std::string& source) {
  GgufVocabulary v;
  if (const auto* llama = dynamic_cast<const LlamaTokenizer*>(&tokenizer)) {
    v = from_llama(*llama);
  } else if (const auto* hf = dynamic_cast<const HfBpeTokenizer*>(&tokenizer)) {
    v = from_hf(*hf, source);
  } else {
    throw InvalidArgument(source + ": its tokenizer (" + std::to_string(tokenizer.vocab_size()) +
                          " byte tokens, the synthetic models' stand-in) has no GGUF form; "
                          "convert a real checkpoint");
  }
  pad_to(v, n_rows, source);
  v.chat_template = chat_template;
  return v;
}

Model gguf_layout(Model m) {
  ModelConfig& c = m.config;
  if (!gguf_permutes_qk(c)) return m;
  const size_t cols = size_t(c.dim);
  // (rows, cols) row-major, rows = heads * head_dim; empty (quantized elsewhere) stays empty.
  auto permute = [&](std::vector<float>& w, int heads) {
    if (w.empty()) return;
    std::vector<float> out(w.size());
    for (int r = 0; r < heads * c.head_dim; ++r) {
      const float* src = &w[size_t(gguf_source_row(r, c.head_dim)) * cols];
      std::copy(src, src + cols, &out[size_t(r) * cols]);
    }
    w = std::move(out);
  };
  for (LayerWeights& l : m.layers) {
    permute(l.wq, c.n_heads);
    permute(l.wk, c.n_kv_heads);
  }
  c.rope_style = RopeStyle::kAdjacentPairs;
  return m;
}

std::vector<uint8_t> export_gguf(const Model& model, const GgufVocabulary& vocab,
                                 uint32_t ggml_type) {
  if (model.config.attention_bias && model.config.architecture != "qwen2") {
    throw InvalidArgument(model.source + ": q/k/v biases outside qwen2 have no GGUF form");
  }
  const Model m = gguf_layout(model);
  // llama.cpp: 1-D tensors stay F32; rows that are not whole blocks fall back (gguf_row_type).
  const auto type_of = [ggml_type](const std::vector<uint64_t>& dims) -> uint32_t {
    if (dims.size() < 2) return kGgmlTypeF32;
    return gguf_row_type(ggml_type, dims[0]);
  };
  return save_gguf_typed(m, type_of, &vocab);
}

}  // namespace nanoserve
