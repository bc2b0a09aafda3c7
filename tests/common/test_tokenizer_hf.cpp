// HfBpeTokenizer against the Hugging Face `tokenizers` library itself
// (tests/data/hf_tokenizer_reference.json, see its header), against encodings derived by
// hand from TinyStories-656K's vocab and merges, and by round trips on the text sample.

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/utf8.h"
#include "test_support.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

const char* const kSeparator = "\n<|endoftext|>\n";

std::unique_ptr<HfBpeTokenizer> tiny_tokenizer() {
  return load_hf_tokenizer(testing::fixture_path("hf_tiny/tokenizer.json"));
}

void expect_matches_library(const HfBpeTokenizer& tok, const nlohmann::json& cases) {
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<int>>();
    EXPECT_EQ(tok.encode(text, false, false), ids) << text;
    EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>()) << text;
  }
}

TEST(HfBpeTokenizer, TinyStoriesMatchesTokenizersLibrary) {
  NANOSERVE_REQUIRE_DATA(path, "tinystories-656k/tokenizer.json");
  expect_matches_library(*load_hf_tokenizer(path),
                         testing::read_fixture("hf_tokenizer_reference.json")["tinystories656k"]);
}

// The synthetic tests/data/hf_tiny vocabulary exercises what TinyStories-656K does not: byte
// fallback (only <0xC3>, <0xA9>, <0x0A> exist, so "é" = C3 A9 has bytes and "ï" = C3 AF does
// not), fuse_unk = false, a Replace before the Prepend, and repeated pairs ("aaaa").
TEST(HfBpeTokenizer, SyntheticByteFallbackVocabularyMatchesTokenizersLibrary) {
  expect_matches_library(*tiny_tokenizer(),
                         testing::read_fixture("hf_tokenizer_reference.json")["hf_tiny"]);
}

TEST(HfBpeTokenizer, TinyStoriesWholeSampleMatchesTokenizersLibrary) {
  NANOSERVE_REQUIRE_DATA(path, "tinystories-656k/tokenizer.json");
  NANOSERVE_REQUIRE_DATA(sample_path, "tinystories_valid_sample.txt");
  const auto tok = load_hf_tokenizer(path);
  const nlohmann::json ref = testing::read_fixture("hf_tokenizer_reference.json")["sample"];
  const auto docs = testing::split_documents(testing::read_text(sample_path), ref["separator"]);
  ASSERT_EQ(docs.size(), ref["documents"].get<size_t>());
  std::vector<int> all;
  for (const std::string& doc : docs) {
    const std::vector<int> ids = tok->encode(doc, false, false);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), ref["tokens"].get<size_t>());
  EXPECT_EQ(testing::fnv1a64(all), ref["fnv1a64_of_ids"].get<std::string>());
}

// Derived by hand from tokenizer.json. The merges list is in rank order and begins
// "e ▁"(0), "d ▁"(1), "t h"(2), ". ▁"(3), "▁ a"(4), …; the normalizer turns text into "▁"+text
// with every space as "▁", and BPE then applies the lowest-rank merge present, repeatedly.
TEST(HfBpeTokenizer, TinyStoriesHandDerivedEncodings) {
  NANOSERVE_REQUIRE_DATA(path, "tinystories-656k/tokenizer.json");
  const auto tok = load_hf_tokenizer(path);
  auto id = [&](const char* piece) { return tok->find_piece(piece); };
  EXPECT_EQ(tok->normalize("a  b"), "\u2581a\u2581\u2581b");
  // "a" → ▁ a; "▁ a" (rank 4) → [▁a].
  EXPECT_EQ(tok->encode("a", false, false), (std::vector<int>{id("\u2581a")}));
  EXPECT_EQ(id("\u2581a"), 85);
  // "the" → ▁ t h e; "t h" (2) → ▁ th e; "th e" (50) → ▁ the. "▁ the" is no merge ("▁ the▁"
  // is, rank 27, but needs a following ▁), so the lone ▁ stays: [▁, the].
  EXPECT_EQ(tok->encode("the", false, false), (std::vector<int>{id("\u2581"), id("the")}));
  EXPECT_EQ(tok->encode("the ", false, false), (std::vector<int>{id("\u2581the\u2581")}));
  // "a  b" → ▁ a ▁ ▁ b; "▁ a" (4) → ▁a ▁ ▁ b; "▁a ▁" (23) → ▁a▁ ▁ b; no merge "▁ b" or "▁ ▁":
  // [▁a▁, ▁, b] = [104, 80, 54].
  EXPECT_EQ(tok->encode("a  b", false, false), (std::vector<int>{104, 80, 54}));
  EXPECT_EQ(tok->piece(104), "\u2581a\u2581");
  // Added tokens are matched on their normalized form "▁<|end_story|>": after a space (or at
  // the start, thanks to the Prepend) but not glued to a word.
  EXPECT_EQ(tok->encode("<|end_story|>", false, false), (std::vector<int>{2}));
  EXPECT_EQ(tok->encode("x<|end_story|>", false, false).back(), id("|>"));
  // A byte that is not UTF-8 is one unknown character: ▁a <unk> b.
  EXPECT_EQ(tok->encode("a\xff" "b", false, false), (std::vector<int>{85, 0, id("b")}));
  EXPECT_EQ(tok->encode("Hi", true, true), (std::vector<int>{1, id("\u2581"), id("Hi"), 2}));
}

// TinyStories-656K has no byte tokens: a character outside its vocabulary (curly quotes,
// accents, emoji, tab) becomes <unk>, consecutive ones fused (fuse_unk), and <unk> decodes as
// " <unk>" (from its normalized content "▁<unk>"). So decode(encode(doc)) is doc with each
// run of unknown characters replaced by " <unk>", and exactly doc when there are none.
TEST(HfBpeTokenizer, TinyStoriesRoundTripsTheWholeSample) {
  NANOSERVE_REQUIRE_DATA(path, "tinystories-656k/tokenizer.json");
  NANOSERVE_REQUIRE_DATA(sample_path, "tinystories_valid_sample.txt");
  const auto tok = load_hf_tokenizer(path);
  int exact = 0, with_unknown = 0;
  for (const std::string& doc :
       testing::split_documents(testing::read_text(sample_path), kSeparator)) {
    std::string expected;
    bool in_unknown_run = false;
    for (size_t i = 0; i < doc.size();) {
      const size_t len = utf8_char_length(doc, i);
      ASSERT_GT(len, 0u);
      const std::string ch = doc.substr(i, len);
      i += len;
      const bool known = ch == " " || tok->find_piece(ch) >= 0;  // " " is normalized to ▁
      if (!known && !in_unknown_run) expected += " <unk>";
      if (known) expected += ch;
      in_unknown_run = !known;
    }
    (expected == doc ? exact : with_unknown)++;
    const std::vector<int> ids = tok->encode(doc, true, true);
    ASSERT_EQ(tok->decode(ids), expected);
    // Streaming one token at a time gives the same text.
    std::string streamed;
    for (size_t k = 1; k < ids.size(); ++k) {
      if (ids[k] != tok->eos_id()) streamed += tok->decode_token(ids[k - 1], ids[k]);
    }
    ASSERT_EQ(streamed, expected);
  }
  EXPECT_GE(exact, 90);  // most stories are plain ASCII
  EXPECT_GE(with_unknown, 1);
}

TEST(HfBpeTokenizer, HeapMergingEqualsNaiveRankLoop) {
  // The naive loop: repeatedly merge the lowest-rank adjacent pair (leftmost on ties), which
  // is what `tokenizers`' Word::merge_all computes.
  const auto tok = tiny_tokenizer();
  const nlohmann::json spec = nlohmann::json::parse(
      testing::read_text(testing::fixture_path("hf_tiny/tokenizer.json")));
  std::vector<std::pair<std::string, std::string>> merges;
  for (const auto& m : spec["model"]["merges"]) {
    const std::string s = m;
    merges.emplace_back(s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1));
  }
  const std::vector<std::string> alphabet = {"a", "b", "c", "t", "h", "e", " ", "aa", "the"};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const std::string text = testing::random_text(seed, 1 + seed * 5, alphabet);
    std::vector<std::string> symbols;
    for (size_t i = 0; i < text.size(); ++i) symbols.emplace_back(1, text[i]);
    for (std::string& s : symbols) s = s == " " ? "\u2581" : s;
    symbols.insert(symbols.begin(), "\u2581");
    while (true) {
      size_t best_rank = merges.size(), best_pos = 0;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        for (size_t r = 0; r < best_rank; ++r) {
          if (merges[r].first == symbols[i] && merges[r].second == symbols[i + 1]) {
            best_rank = r;
            best_pos = i;
          }
        }
      }
      if (best_rank == merges.size()) break;
      symbols[best_pos] += symbols[best_pos + 1];
      symbols.erase(symbols.begin() + best_pos + 1);
    }
    std::vector<int> expected;
    for (const std::string& s : symbols) expected.push_back(tok->find_piece(s));
    ASSERT_EQ(tok->encode(text, false, false), expected) << text;
  }
}

TEST(HfBpeTokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const auto tok = tiny_tokenizer();
  EXPECT_THROW(tok->decode({6, tok->vocab_size()}), InvalidArgument);
  EXPECT_THROW(tok->decode({-1}), InvalidArgument);
  EXPECT_THROW(tok->decode_token(1, 1000), InvalidArgument);
  EXPECT_THROW(tok->piece(-5), InvalidArgument);
}

TEST(HfBpeTokenizer, StreamedByteTokensAreRawBytesButWholeDecodeChecksUtf8) {
  const auto tok = tiny_tokenizer();  // <0xC3> = 3, <0xA9> = 4
  EXPECT_EQ(tok->decode_token(6, 3), "\xC3");
  EXPECT_EQ(tok->decode({6, 3, 4}), "é");
  // A lone C3 is not UTF-8: `tokenizers`' ByteFallback decoder gives U+FFFD per byte token.
  EXPECT_EQ(tok->decode({7, 3, 7}), "a\xEF\xBF\xBD" "a");
}

}  // namespace
}  // namespace nanoserve
