#include "common/loaders/gguf_vocabulary.h"

#include <cfloat>
#include <cmath>

#include "common/error.h"
#include "common/loaders/mapped_file.h"

namespace nanoserve {

namespace {

const GgufArray& require_array(const GgufFile& f, const std::string& key) {
  const GgufArray* a = f.metadata.get_array(key);
  if (a == nullptr) throw LoadError(f.name, key, "is missing");
  return *a;
}

/// An optional per-token array must have exactly one entry per token.
const GgufArray* per_token_array(const GgufFile& f, const std::string& key, size_t n_tokens) {
  const GgufArray* a = f.metadata.get_array(key);
  if (a != nullptr && a->items.size() != n_tokens) {
    throw LoadError(
        f.name, key,
        std::to_string(a->items.size()) + " entries for " + std::to_string(n_tokens) + " tokens");
  }
  return a;
}

int special_id(const GgufFile& f, const std::string& key, size_t n_tokens) {
  const std::optional<int64_t> id = f.metadata.get_int(key);
  if (!id || *id == 0xFFFFFFFFLL || *id == -1) return -1;  // absent, or llama.cpp's "none"
  if (*id < 0 || uint64_t(*id) >= n_tokens) {
    throw LoadError(f.name, key,
                    "token id " + std::to_string(*id) + " is outside the vocabulary of " +
                        std::to_string(n_tokens) + " tokens");
  }
  return int(*id);
}

std::optional<bool> optional_bool(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.metadata.find(key);
  if (v == nullptr) return std::nullopt;
  if (const bool* b = std::get_if<bool>(&v->data)) return *b;
  throw LoadError(f.name, key, "is a " + to_string(v->type()) + ", expected a bool");
}

std::vector<std::string> string_array(const GgufFile& f, const std::string& key,
                                      const GgufArray& a) {
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const GgufValue& v : a.items) {
    const std::string* s = std::get_if<std::string>(&v.data);
    if (s == nullptr) {
      throw LoadError(f.name, key, "holds " + to_string(v.type()) + " elements, expected strings");
    }
    out.push_back(*s);
  }
  return out;
}

}  // namespace

GgufVocabulary gguf_vocabulary(const GgufFile& f) {
  GgufVocabulary v;
  const std::optional<std::string> model = f.metadata.get_string("tokenizer.ggml.model");
  if (!model) throw LoadError(f.name, "tokenizer.ggml.model", "is missing");
  v.model = *model;
  v.tokens = string_array(f, "tokenizer.ggml.tokens", require_array(f, "tokenizer.ggml.tokens"));
  const size_t n = v.tokens.size();
  if (n == 0) throw LoadError(f.name, "tokenizer.ggml.tokens", "is empty");

  if (const GgufArray* scores = per_token_array(f, "tokenizer.ggml.scores", n)) {
    v.scores.reserve(n);
    for (const GgufValue& s : scores->items) {
      const std::optional<double> x = s.as_float();
      if (!x || !(std::fabs(*x) <= double(FLT_MAX))) {
        throw LoadError(f.name, "tokenizer.ggml.scores",
                        "holds a " + to_string(s.type()) + " that is not a finite float score");
      }
      v.scores.push_back(float(*x));
    }
  }
  if (const GgufArray* types = per_token_array(f, "tokenizer.ggml.token_type", n)) {
    v.token_types.reserve(n);
    for (const GgufValue& t : types->items) {
      const std::optional<int64_t> x = t.as_int();
      if (!x || *x < 0 || *x > int64_t(GgufTokenType::kByte)) {
        throw LoadError(f.name, "tokenizer.ggml.token_type",
                        "holds a value that is not a token type 0..6");
      }
      v.token_types.push_back(static_cast<GgufTokenType>(*x));
    }
  }
  if (const GgufArray* merges = f.metadata.get_array("tokenizer.ggml.merges")) {
    v.merges = string_array(f, "tokenizer.ggml.merges", *merges);
  }
  v.pre = f.metadata.get_string("tokenizer.ggml.pre").value_or("");
  v.chat_template = f.metadata.get_string("tokenizer.chat_template").value_or("");
  v.bos_id = special_id(f, "tokenizer.ggml.bos_token_id", n);
  v.eos_id = special_id(f, "tokenizer.ggml.eos_token_id", n);
  v.unk_id = special_id(f, "tokenizer.ggml.unknown_token_id", n);
  v.pad_id = special_id(f, "tokenizer.ggml.padding_token_id", n);
  v.add_bos = optional_bool(f, "tokenizer.ggml.add_bos_token");
  v.add_eos = optional_bool(f, "tokenizer.ggml.add_eos_token");
  return v;
}

GgufVocabulary load_gguf_vocabulary(const std::string& path) {
  const MappedFile file(path);
  return load_gguf_vocabulary_from_memory(file.data(), file.size(), path);
}

GgufVocabulary load_gguf_vocabulary_from_memory(const uint8_t* data, size_t size,
                                                const std::string& name) {
  return gguf_vocabulary(parse_gguf(data, size, name));
}

}  // namespace nanoserve
