// The two sources of a LlamaVocab: llama2.c's tokenizer.bin and GGUF metadata arrays.
// Everything is validated before it is trusted (docs/design.md, "Bad input"): a length is checked
// against the bytes that remain before anything is allocated or read.

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/io/input_file.h"
#include "common/tokenizer/llama_tokenizer.h"

namespace nanoserve {
namespace {

// Sanity bounds. The longest piece of the Llama-2 vocabulary is 27 bytes; a length field in
// the tens of thousands means a corrupt or foreign file. 64 MiB is ~150× tokenizer.bin.
constexpr int32_t kMaxTokenLength = 1 << 16;
constexpr uint64_t kMaxTokenizerFileBytes = 64ull << 20;

std::string token_field(size_t i, const char* what) {
  return "token[" + std::to_string(i) + "]" + what;
}

// Little-endian reader over a byte range (the format is little-endian; so are the hosts we
// build for, x86-64 and AArch64, hence memcpy).
struct Cursor {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  size_t remaining() const { return size - pos; }
  template <class T>
  T read() {  // callers check remaining() first
    T v;
    std::memcpy(&v, data + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
};

}  // namespace

std::unique_ptr<LlamaTokenizer> parse_llama2c_tokenizer(const uint8_t* data, size_t size,
                                                        int expected_vocab_size,
                                                        const std::string& name) {
  if (expected_vocab_size < 0) {
    throw InvalidArgument("expected_vocab_size " + std::to_string(expected_vocab_size) +
                          " for " + name + " must be ≥ 0 (0: as many tokens as the file holds)");
  }
  Cursor in{data, size};
  if (in.remaining() < 4) {
    throw LoadError(name, "max_token_length",
                    "file is " + std::to_string(size) + " bytes, too short for the 4-byte header");
  }
  const int32_t max_len = in.read<int32_t>();
  if (max_len < 1 || max_len > kMaxTokenLength) {
    throw LoadError(name, "max_token_length",
                    std::to_string(max_len) + " is outside [1, " +
                        std::to_string(kMaxTokenLength) + "]");
  }

  LlamaVocab vocab;
  const size_t want = static_cast<size_t>(expected_vocab_size);
  // Every token takes at least 8 bytes, which bounds the reservation by the file size.
  const size_t capacity = want > 0 ? std::min(want, size / 8) : size / 8;
  vocab.pieces.reserve(capacity);
  vocab.scores.reserve(capacity);
  for (size_t i = 0; want > 0 ? i < want : in.remaining() > 0; ++i) {
    if (in.remaining() == 0) {
      throw LoadError(name, "vocab_size",
                      "the file holds " + std::to_string(i) +
                          " tokens but the model's vocab_size is " + std::to_string(want));
    }
    if (in.remaining() < 8) {
      throw LoadError(name, token_field(i, ""),
                      "file ends " + std::to_string(in.remaining()) +
                          " bytes into the 8-byte score/len header (truncated file)");
    }
    const float score = in.read<float>();
    if (!std::isfinite(score)) {
      throw LoadError(name, token_field(i, ".score"), "is not a finite number");
    }
    const int32_t len = in.read<int32_t>();
    if (len < 0 || len > max_len) {
      throw LoadError(name, token_field(i, ".len"),
                      std::to_string(len) + " is outside [0, max_token_length=" +
                          std::to_string(max_len) + "]");
    }
    if (in.remaining() < static_cast<size_t>(len)) {
      throw LoadError(name, token_field(i, ".bytes"),
                      "needs " + std::to_string(len) + " bytes but " +
                          std::to_string(in.remaining()) + " remain (truncated file)");
    }
    vocab.pieces.emplace_back(reinterpret_cast<const char*>(data + in.pos), size_t(len));
    in.pos += static_cast<size_t>(len);
    vocab.scores.push_back(score);
  }
  if (in.remaining() > 0) {
    throw LoadError(name, "vocab_size",
                    std::to_string(in.remaining()) + " bytes remain after token " +
                        std::to_string(want - 1) + ": the file holds more than the model's " +
                        "vocab_size=" + std::to_string(want) + " tokens");
  }
  if (vocab.pieces.size() < 3) {
    throw LoadError(name, "vocab_size",
                    std::to_string(vocab.pieces.size()) +
                        " tokens; the format reserves ids 0, 1, 2 for <unk>, BOS, EOS");
  }
  return std::make_unique<LlamaTokenizer>(std::move(vocab));  // llama2.c ids: unk 0, BOS 1, EOS 2
}

std::unique_ptr<LlamaTokenizer> load_llama2c_tokenizer(const std::string& path,
                                                       int expected_vocab_size) {
  const std::string bytes = read_input_file(path, "tokenizer", kMaxTokenizerFileBytes);
  return parse_llama2c_tokenizer(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                 expected_vocab_size, path);
}

std::unique_ptr<LlamaTokenizer> make_gguf_llama_tokenizer(const std::string& file,
                                                          std::vector<std::string> tokens,
                                                          std::vector<float> scores,
                                                          const std::vector<int32_t>& token_types,
                                                          int64_t bos_id, int64_t eos_id,
                                                          int64_t unk_id) {
  const size_t n = tokens.size();
  const std::string count = std::to_string(n) + " tokens";
  if (n == 0) throw LoadError(file, "tokenizer.ggml.tokens", "is empty");
  if (scores.size() != n) {
    throw LoadError(file, "tokenizer.ggml.scores",
                    "has " + std::to_string(scores.size()) + " entries for " + count);
  }
  if (!token_types.empty() && token_types.size() != n) {
    throw LoadError(file, "tokenizer.ggml.token_type",
                    "has " + std::to_string(token_types.size()) + " entries for " + count);
  }
  const std::pair<const char*, int64_t> specials[] = {{"tokenizer.ggml.bos_token_id", bos_id},
                                                      {"tokenizer.ggml.eos_token_id", eos_id},
                                                      {"tokenizer.ggml.unknown_token_id", unk_id}};
  for (const auto& [key, id] : specials) {
    if (id < 0 || static_cast<uint64_t>(id) >= n) {
      throw LoadError(file, key, std::to_string(id) + " is outside the " + count);
    }
  }

  LlamaVocab vocab;
  vocab.matchable.assign(n, true);
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(scores[i])) {
      throw LoadError(file, "tokenizer.ggml.scores[" + std::to_string(i) + "]",
                      "is not a finite number");
    }
    if (token_types.empty()) continue;
    const int32_t type = token_types[i];
    const std::string key = "tokenizer.ggml.token_type[" + std::to_string(i) + "]";
    if (type < 1 || type > 6) throw LoadError(file, key, std::to_string(type) + " is not 1..6");
    if (type == static_cast<int32_t>(GgufTokenType::kUserDefined)) {
      throw LoadError(file, key,
                      "user-defined token '" + tokens[i] + "' is not supported (SentencePiece "
                      "matches these whole before BPE; this tokenizer does not)");
    }
    vocab.matchable[i] = type == static_cast<int32_t>(GgufTokenType::kNormal);
  }
  // SentencePiece writes a space as "▁" (U+2581, bytes E2 96 81); llama2.c's export script
  // replaces it with ' ' and the algorithm relies on it (the dummy prefix is the piece " ").
  static const std::string kSpm = "\xE2\x96\x81";
  for (std::string& t : tokens) {
    for (size_t at = t.find(kSpm); at != std::string::npos; at = t.find(kSpm, at + 1)) {
      t.replace(at, kSpm.size(), " ");
    }
  }
  vocab.pieces = std::move(tokens);
  vocab.scores = std::move(scores);
  vocab.bos_id = static_cast<int>(bos_id);
  vocab.eos_id = static_cast<int>(eos_id);
  vocab.unk_id = static_cast<int>(unk_id);
  return std::make_unique<LlamaTokenizer>(std::move(vocab));
}

}  // namespace nanoserve
