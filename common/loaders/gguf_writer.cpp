#include "common/loaders/gguf_writer.h"

#include <cstring>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/loaders/tensor_decode.h"
#include "common/rope_frequencies.h"

namespace nanoserve {

namespace {

class ByteSink {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put(uint64_t(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  void put_value(const GgufValue& v) {
    std::visit(
        [this](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            put_string(x);
          } else if constexpr (std::is_same_v<T, GgufArray>) {
            put(uint32_t(x.element_type));
            put(uint64_t(x.items.size()));
            for (const GgufValue& item : x.items) put_value(item);
          } else if constexpr (std::is_same_v<T, bool>) {
            put(uint8_t(x ? 1 : 0));
          } else {
            put(x);
          }
        },
        v.data);
  }
  void pad_to(uint64_t alignment) {
    while (out.size() % alignment != 0) out.push_back(0);
  }
  std::vector<uint8_t> out;
};

template <typename T>
GgufValue array_of(GgufType type, const std::vector<T>& xs) {
  GgufArray a;
  a.element_type = type;
  a.items.reserve(xs.size());
  for (const T& x : xs) a.items.push_back(GgufValue{x});
  return GgufValue{std::move(a)};
}

}  // namespace

GgufValue gguf_string(std::string s) { return GgufValue{std::move(s)}; }
GgufValue gguf_uint32(uint32_t x) { return GgufValue{x}; }
GgufValue gguf_float32(float x) { return GgufValue{x}; }

void GgufWriter::add_metadata(const std::string& key, GgufValue value) {
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, const std::vector<uint64_t>& dims,
                            uint32_t ggml_type, std::vector<uint8_t> bytes) {
  tensors_.push_back({name, dims, ggml_type, std::move(bytes)});
}

std::vector<uint8_t> GgufWriter::serialize(uint64_t alignment) const {
  ByteSink s;
  for (char ch : kGgufMagic) s.out.push_back(uint8_t(ch));
  s.put(uint32_t(3));
  s.put(uint64_t(tensors_.size()));
  s.put(uint64_t(metadata_.size()));
  for (const auto& [key, value] : metadata_) {
    s.put_string(key);
    s.put(uint32_t(value.type()));
    s.put_value(value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    s.put_string(t.name);
    s.put(uint32_t(t.dims.size()));
    for (uint64_t d : t.dims) s.put(d);
    s.put(t.ggml_type);
    s.put(offset);
    offset += t.bytes.size();
    offset += (alignment - offset % alignment) % alignment;
  }
  s.pad_to(alignment);
  for (const Tensor& t : tensors_) {
    s.out.insert(s.out.end(), t.bytes.begin(), t.bytes.end());
    s.pad_to(alignment);
  }
  return std::move(s.out);
}

std::vector<uint8_t> encode_floats(const std::vector<float>& values, uint32_t ggml_type) {
  switch (ggml_type) {
    case kGgmlTypeF32: return encode_f32(values);
    case kGgmlTypeF16: return encode_f16(values);
    case kGgmlTypeBF16: return encode_bf16(values);
    case kGgmlTypeQ8_0: return encode_q8_0(values);
    case kGgmlTypeQ4_0: return encode_q4_0(values);
    case kGgmlTypeQ5_0: return encode_q5_0(values);
    case kGgmlTypeQ4_K: return encode_q4_k(values);
    default:
      throw InvalidArgument("encode_floats: ggml type " + std::to_string(ggml_type) +
                            " is not F32, F16, BF16, Q8_0, Q4_0, Q5_0 or Q4_K");
  }
}

std::vector<uint8_t> save_gguf(const Model& model, uint32_t ggml_type,
                               const GgufVocabulary* vocab) {
  return save_gguf_typed(model, [ggml_type](const std::vector<uint64_t>&) { return ggml_type; },
                         vocab);
}

std::vector<uint8_t> save_gguf_typed(const Model& model, const GgufTensorTypeRule& type_of,
                                     const GgufVocabulary* vocab,
                                     const GgufEncodedTensors* encoded) {
  const ModelConfig& c = model.config;
  const bool qwen2 = c.architecture == "qwen2";
  if (c.architecture != "llama" && !qwen2) {
    throw InvalidArgument("save_gguf: " + model.source + " has architecture '" + c.architecture +
                          "'; the GGUF writer stores llama and qwen2");
  }
  // llama GGUF rows are permuted for adjacent pairs; qwen2 keeps Hugging Face's rotate-half.
  const RopeStyle style = qwen2 ? RopeStyle::kRotateHalf : RopeStyle::kAdjacentPairs;
  if (c.rope_style != style) {
    throw InvalidArgument("save_gguf: " + model.source + " uses " + to_string(c.rope_style) +
                          " RoPE; GGUF " + c.architecture + " tensors expect " +
                          to_string(style));
  }
  if (c.attention_bias != qwen2) {
    throw InvalidArgument("save_gguf: " + model.source +
                          " has q/k/v biases outside qwen2, which the GGUF writer does not store");
  }
  // RoPE scaling as llama.cpp's converter writes it: linear as rope.scaling keys, llama3 as the
  // per-pair divisors of rope_freqs.weight (which is also how such a file loads back).
  const RopeScaling& rs = c.rope_scaling;
  std::vector<float> freq_factors = rs.freq_factors;
  if (rs.type == RopeScalingType::kLlama3) {
    if (!freq_factors.empty()) {
      throw InvalidArgument("save_gguf: " + model.source +
                            " has both llama3 scaling and frequency factors");
    }
    freq_factors = llama3_rope_freq_factors(c.head_dim, c.rope_theta, rs);
  }
  const std::string p = c.architecture + ".";
  GgufWriter w;
  w.add_metadata("general.architecture", gguf_string(c.architecture));
  w.add_metadata("general.name", gguf_string(c.name));
  w.add_metadata(p + "context_length", gguf_uint32(c.max_seq_len));
  w.add_metadata(p + "embedding_length", gguf_uint32(c.dim));
  w.add_metadata(p + "feed_forward_length", gguf_uint32(c.hidden_dim));
  w.add_metadata(p + "block_count", gguf_uint32(c.n_layers));
  w.add_metadata(p + "attention.head_count", gguf_uint32(c.n_heads));
  w.add_metadata(p + "attention.head_count_kv", gguf_uint32(c.n_kv_heads));
  w.add_metadata(p + "attention.key_length", gguf_uint32(c.head_dim));
  w.add_metadata(p + "attention.value_length", gguf_uint32(c.head_dim));
  w.add_metadata(p + "rope.dimension_count", gguf_uint32(c.head_dim));
  w.add_metadata(p + "rope.freq_base", gguf_float32(c.rope_theta));
  w.add_metadata(p + "attention.layer_norm_rms_epsilon", gguf_float32(c.norm_eps));
  if (rs.type == RopeScalingType::kLinear) {
    w.add_metadata(p + "rope.scaling.type", gguf_string("linear"));
    w.add_metadata(p + "rope.scaling.factor", gguf_float32(rs.factor));
  }
  if (vocab != nullptr) {
    w.add_metadata("tokenizer.ggml.model", gguf_string(vocab->model));
    w.add_metadata("tokenizer.ggml.tokens", array_of(GgufType::kString, vocab->tokens));
    if (!vocab->scores.empty()) {
      w.add_metadata("tokenizer.ggml.scores", array_of(GgufType::kFloat32, vocab->scores));
    }
    if (!vocab->token_types.empty()) {
      std::vector<int32_t> types;
      for (GgufTokenType t : vocab->token_types) types.push_back(int32_t(t));
      w.add_metadata("tokenizer.ggml.token_type", array_of(GgufType::kInt32, types));
    }
    if (!vocab->merges.empty()) {
      w.add_metadata("tokenizer.ggml.merges", array_of(GgufType::kString, vocab->merges));
    }
    if (!vocab->pre.empty()) w.add_metadata("tokenizer.ggml.pre", gguf_string(vocab->pre));
    for (const auto& [key, id] : {std::pair<const char*, int>{"bos_token_id", vocab->bos_id},
                                  {"eos_token_id", vocab->eos_id},
                                  {"unknown_token_id", vocab->unk_id},
                                  {"padding_token_id", vocab->pad_id}}) {
      if (id >= 0) w.add_metadata(std::string("tokenizer.ggml.") + key, gguf_uint32(uint32_t(id)));
    }
    if (vocab->add_bos) w.add_metadata("tokenizer.ggml.add_bos_token", GgufValue{*vocab->add_bos});
    if (vocab->add_eos) w.add_metadata("tokenizer.ggml.add_eos_token", GgufValue{*vocab->add_eos});
    if (!vocab->chat_template.empty()) {
      w.add_metadata("tokenizer.chat_template", gguf_string(vocab->chat_template));
    }
  }
  const uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  size_t encoded_used = 0;
  auto add = [&](const std::string& name, const std::vector<uint64_t>& dims,
                 const std::vector<float>& t) {
    const auto given = encoded != nullptr ? encoded->find(name) : GgufEncodedTensors::const_iterator{};
    if (encoded == nullptr || given == encoded->end()) {
      const uint32_t type = type_of(dims);
      w.add_tensor(name, dims, type, encode_floats(t, type));
      return;
    }
    const GgmlTypeInfo* info = find_ggml_type(given->second.ggml_type);
    const uint64_t n = dims[0] * (dims.size() > 1 ? dims[1] : 1);
    if (info == nullptr || dims[0] % info->block_size != 0 ||
        given->second.bytes.size() != n / info->block_size * info->type_size) {
      throw InvalidArgument("save_gguf: encoded tensor " + name + " has " +
                            std::to_string(given->second.bytes.size()) + " bytes of type " +
                            (info != nullptr ? info->name : std::to_string(given->second.ggml_type)) +
                            ", which do not fit its " + std::to_string(dims[0]) + " x " +
                            std::to_string(n / dims[0]) + " elements");
    }
    w.add_tensor(name, dims, given->second.ggml_type, given->second.bytes);
    ++encoded_used;
  };
  if (!freq_factors.empty()) {  // F32, as llama.cpp writes it
    w.add_tensor("rope_freqs.weight", {freq_factors.size()}, kGgmlTypeF32,
                 encode_floats(freq_factors, kGgmlTypeF32));
  }
  add("token_embd.weight", {d, v}, model.token_embedding);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const LayerWeights& lw = model.layers[l];
    add(b + "attn_norm.weight", {d}, lw.attn_norm);
    add(b + "attn_q.weight", {d, q}, lw.wq);
    add(b + "attn_k.weight", {d, kv}, lw.wk);
    add(b + "attn_v.weight", {d, kv}, lw.wv);
    if (qwen2) {  // biases stay F32, as llama.cpp's converter stores 1-D tensors
      w.add_tensor(b + "attn_q.bias", {q}, kGgmlTypeF32, encode_floats(lw.bq, kGgmlTypeF32));
      w.add_tensor(b + "attn_k.bias", {kv}, kGgmlTypeF32, encode_floats(lw.bk, kGgmlTypeF32));
      w.add_tensor(b + "attn_v.bias", {kv}, kGgmlTypeF32, encode_floats(lw.bv, kGgmlTypeF32));
    }
    add(b + "attn_output.weight", {q, d}, lw.wo);
    add(b + "ffn_norm.weight", {d}, lw.ffn_norm);
    add(b + "ffn_gate.weight", {d, h}, lw.w1);
    add(b + "ffn_down.weight", {h, d}, lw.w2);
    add(b + "ffn_up.weight", {d, h}, lw.w3);
  }
  add("output_norm.weight", {d}, model.final_norm);
  if (!c.tied_classifier) add("output.weight", {d, v}, model.classifier);
  if (encoded != nullptr && encoded_used != encoded->size()) {
    throw InvalidArgument("save_gguf: " + std::to_string(encoded->size() - encoded_used) +
                          " encoded tensor(s) name no tensor of a " + c.architecture + " file");
  }
  return w.serialize();
}

}  // namespace nanoserve
