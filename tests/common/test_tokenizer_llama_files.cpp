// The two sources of a LlamaVocab — llama2.c tokenizer.bin and GGUF metadata arrays — on
// small hand-made vocabularies (merge order checked by hand) and on bad input.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "common/tokenizer/llama_tokenizer.h"
#include "test_support.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

struct Entry {
  float score;
  std::string piece;
};

// Serializes the llama2.c format: int32 max_token_length, then (float32, int32 len, bytes).
std::vector<uint8_t> llama2c_bytes(int32_t max_len, const std::vector<Entry>& entries) {
  std::vector<uint8_t> out;
  auto put = [&](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  put(&max_len, 4);
  for (const Entry& e : entries) {
    const int32_t len = static_cast<int32_t>(e.piece.size());
    put(&e.score, 4);
    put(&len, 4);
    put(e.piece.data(), e.piece.size());
  }
  return out;
}

// unk/BOS/EOS, then a few pieces: " " 3, "a" 4, "b" 5, " a" 6, "ab" 7, "aa" 8.
std::vector<Entry> small_vocab(float score_space_a, float score_ab) {
  return {{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {0, " "}, {0, "a"}, {0, "b"},
          {score_space_a, " a"}, {score_ab, "ab"}, {-1, "aa"}};
}

std::unique_ptr<LlamaTokenizer> parse(const std::vector<uint8_t>& bytes, int expected) {
  return parse_llama2c_tokenizer(bytes.data(), bytes.size(), expected, "tok.bin");
}

// Expects a LoadError whose field is `field`.
template <class F>
void expect_load_error(F&& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "no LoadError for field " << field;
  } catch (const LoadError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(Llama2cTokenizerFile, MergesHighestScoreFirstAndLeftmostOnTies) {
  // "ab" → " ab" → [" ", "a", "b"]; candidate pairs " a" (pos 0) and "ab" (pos 1).
  EXPECT_EQ(parse(llama2c_bytes(6, small_vocab(-1, -2)), 9)->encode("ab", false, false),
            (std::vector<int>{6, 5}));  // " a" scores higher
  EXPECT_EQ(parse(llama2c_bytes(6, small_vocab(-2, -1)), 9)->encode("ab", false, false),
            (std::vector<int>{3, 7}));  // "ab" scores higher
  EXPECT_EQ(parse(llama2c_bytes(6, small_vocab(-1, -1)), 9)->encode("ab", false, false),
            (std::vector<int>{6, 5}));  // tie: the leftmost pair, like run.c's strict '>'
  // "aaa": pairs (a,a) at positions 1 and 2 tie; the leftmost merges, the last "a" is left.
  EXPECT_EQ(parse(llama2c_bytes(6, small_vocab(-5, -5)), 9)->encode("aaa", false, false),
            (std::vector<int>{3, 8, 4}));
  // run.c never merges a piece scored at or below its -1e10 starting point.
  EXPECT_EQ(parse(llama2c_bytes(6, small_vocab(-1e10f, -1e11f)), 9)->encode("ab", false, false),
            (std::vector<int>{3, 4, 5}));
}

TEST(Llama2cTokenizerFile, ByteWithoutBytePieceBecomesUnk) {
  const auto tok = parse(llama2c_bytes(6, small_vocab(-1, -2)), 0);  // 0: count from the file
  EXPECT_EQ(tok->vocab_size(), 9);
  EXPECT_EQ(tok->encode("az", false, false), (std::vector<int>{6, 0}));
}

TEST(Llama2cTokenizerFile, RejectsEveryTruncation) {
  const std::vector<uint8_t> good = llama2c_bytes(6, small_vocab(-1, -2));
  for (size_t n = 0; n < good.size(); ++n) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + n);
    EXPECT_THROW(parse(cut, 9), LoadError) << n << " bytes";
  }
}

TEST(Llama2cTokenizerFile, RejectsBadHeaderAndLengths) {
  expect_load_error([] { parse(llama2c_bytes(0, small_vocab(-1, -2)), 9); }, "max_token_length");
  expect_load_error([] { parse(llama2c_bytes(1 << 20, small_vocab(-1, -2)), 9); },
                    "max_token_length");
  expect_load_error([] { parse(llama2c_bytes(1, small_vocab(-1, -2)), 9); }, "token[0].len");
  std::vector<uint8_t> negative = llama2c_bytes(6, small_vocab(-1, -2));
  const int32_t minus_one = -1;
  std::memcpy(&negative[4 + 4], &minus_one, 4);  // token 0's len
  expect_load_error([&] { parse(negative, 9); }, "token[0].len");
  std::vector<uint8_t> huge = llama2c_bytes(1 << 16, small_vocab(-1, -2));
  const int32_t big = 1 << 16;  // allowed by max_token_length, far beyond the file
  std::memcpy(&huge[4 + 4], &big, 4);
  expect_load_error([&] { parse(huge, 9); }, "token[0].bytes");
  std::vector<Entry> nan_vocab = small_vocab(-1, -2);
  nan_vocab[3].score = std::numeric_limits<float>::quiet_NaN();
  expect_load_error([&] { parse(llama2c_bytes(6, nan_vocab), 9); }, "token[3].score");
}

TEST(Llama2cTokenizerFile, RejectsTokenCountOtherThanTheModels) {
  const std::vector<uint8_t> good = llama2c_bytes(6, small_vocab(-1, -2));
  expect_load_error([&] { parse(good, 10); }, "vocab_size");  // file holds fewer
  expect_load_error([&] { parse(good, 8); }, "vocab_size");   // file holds more
  expect_load_error([] { parse(llama2c_bytes(6, {{0, "<unk>"}, {0, "<s>"}}), 0); }, "vocab_size");
  EXPECT_THROW(parse(good, -1), InvalidArgument);
}

// GGUF stores the same vocabulary as tok512.bin with "▁" for spaces, "<s>"/"</s>" for
// BOS/EOS and a type per token (data README: stories260K.gguf). Rebuilt that way from
// tok512.bin, it must encode and decode every document exactly like tok512.bin.
TEST(GgufLlamaTokenizer, Tok512InGgufFormEncodesLikeTokenizerBin) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  NANOSERVE_REQUIRE_DATA(sample_path, "tinystories_valid_sample.txt");
  const auto bin = load_llama2c_tokenizer(path, 512);
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int id = 0; id < 512; ++id) {
    std::string p = bin->piece(id);
    for (size_t at = p.find(' '); at != std::string::npos; at = p.find(' ', at)) {
      p.replace(at, 1, "\xE2\x96\x81");
    }
    tokens.push_back(id == 1 ? "<s>" : id == 2 ? "</s>" : p);
    scores.push_back(bin->score(id));
    types.push_back(id == 0 ? 2 : id <= 2 ? 3 : id <= 258 ? 6 : 1);
  }
  const auto gguf = make_gguf_llama_tokenizer("stories260K.gguf", tokens, scores, types, 1, 2, 0);
  EXPECT_EQ(gguf->piece(261), " a");
  for (const std::string& doc : testing::split_documents(testing::read_text(sample_path),
                                                         "\n<|endoftext|>\n")) {
    const std::vector<int> ids = bin->encode(doc, true, false);
    ASSERT_EQ(gguf->encode(doc, true, false), ids);
    ASSERT_EQ(gguf->decode(ids), doc);
  }
}

TEST(GgufLlamaTokenizer, ControlTokensAreNotMatchedFromText) {
  // "<s>" can be built by merging "<s" + ">"; llama2.c (no token types) does so, GGUF marks
  // it as a control token that text never produces.
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "<", "s", ">", "<s"};
  const std::vector<float> scores = {0, 0, 0, -1, -1, -1, -1, -2};
  const auto gguf = make_gguf_llama_tokenizer("m.gguf", tokens, scores, {2, 3, 3, 1, 1, 1, 1, 1},
                                              1, 2, 0);
  EXPECT_EQ(gguf->encode("<s>", false, false), (std::vector<int>{3, 7, 6}));
  LlamaVocab all_matchable;
  all_matchable.pieces = {"<unk>", "<s>", "</s>", " ", "<", "s", ">", "<s"};
  all_matchable.scores = scores;
  EXPECT_EQ(LlamaTokenizer(all_matchable).encode("<s>", false, false),
            (std::vector<int>{3, 1}));
}

TEST(GgufLlamaTokenizer, RejectsInconsistentMetadata) {
  const std::vector<std::string> t = {"<unk>", "<s>", "</s>", "a"};
  const std::vector<float> s = {0, 0, 0, -1};
  const std::vector<int32_t> ty = {2, 3, 3, 1};
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", {}, {}, {}, 1, 2, 0); },
                    "tokenizer.ggml.tokens");
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, {0, 0}, ty, 1, 2, 0); },
                    "tokenizer.ggml.scores");
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, s, {1, 1}, 1, 2, 0); },
                    "tokenizer.ggml.token_type");
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, s, ty, 4294967295, 2, 0); },
                    "tokenizer.ggml.bos_token_id");
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, s, ty, 1, 4, 0); },
                    "tokenizer.ggml.eos_token_id");
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, s, ty, 1, 2, -1); },
                    "tokenizer.ggml.unknown_token_id");
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, s, {2, 3, 3, 4}, 1, 2, 0); },
                    "tokenizer.ggml.token_type[3]");
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, s, {2, 3, 3, 9}, 1, 2, 0); },
                    "tokenizer.ggml.token_type[3]");
  const std::vector<float> inf = {0, 0, 0, INFINITY};
  expect_load_error([&] { make_gguf_llama_tokenizer("m.gguf", t, inf, ty, 1, 2, 0); },
                    "tokenizer.ggml.scores[3]");
}

}  // namespace
}  // namespace nanoserve
