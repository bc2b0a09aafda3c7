// LlamaTokenizer on the real llama2.c vocabularies: tok512.bin against SentencePiece's own
// encodings (tests/data/tok512_sentencepiece_reference.json, see its header), tokenizer.bin
// (Llama-2, 32000) against published ids and hand-checkable cases, round trips on the text
// sample, and the heap-based merge loop against a literal transcription of run.c's.

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/tokenizer/llama_tokenizer.h"
#include "test_support.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

using testing::collapse_spaces;
using testing::fnv1a64;
using testing::read_fixture;

// The two llama2.c vocabularies in ../shared/data and their sizes.
const std::pair<const char*, int> kVocabs[] = {{"tok512.bin", 512}, {"tokenizer.bin", 32000}};

// Whether SentencePiece's remove_extra_whitespaces would change `text`.
bool has_extra_spaces(const std::string& text) { return collapse_spaces(text) != text; }

// SentencePiece (tok512.model: identity normalizer, add_dummy_prefix, remove_extra_whitespaces)
// and llama2.c agree on every text whose spaces SentencePiece leaves alone: same dummy
// prefix, same character pieces and byte fallback, same score-ordered merges.
TEST(LlamaTokenizer, Tok512MatchesSentencePieceOnTextsWithoutExtraSpaces) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  const auto tok = load_llama2c_tokenizer(path, 512);
  const nlohmann::json ref = read_fixture("tok512_sentencepiece_reference.json");
  int compared = 0;
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    if (has_extra_spaces(text)) continue;
    EXPECT_EQ(tok->encode(text, false, false), c["ids"].get<std::vector<int>>()) << text;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

// The one documented difference: SentencePiece first removes leading/trailing spaces and
// collapses runs of spaces (normalizer_spec.remove_extra_whitespaces = true in tok512.model);
// llama2.c's encode tokenizes every space. After the same whitespace normalization the two
// agree again, and without it they must differ (else this test would prove nothing).
TEST(LlamaTokenizer, Tok512DiffersFromSentencePieceOnlyByExtraSpaces) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  const auto tok = load_llama2c_tokenizer(path, 512);
  const nlohmann::json ref = read_fixture("tok512_sentencepiece_reference.json");
  int compared = 0;
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    if (!has_extra_spaces(text)) continue;
    const auto spm_ids = c["ids"].get<std::vector<int>>();
    EXPECT_EQ(tok->encode(collapse_spaces(text), false, false), spm_ids) << text;
    EXPECT_NE(tok->encode(text, false, false), spm_ids) << text;
    ++compared;
  }
  EXPECT_GE(compared, 5);
  // By hand: "a  b" → " a  b" → pieces " a"(261), " "(410), " b"(268): no piece " " + " b"
  // or " a" + " " exists, so the lone space stays; SentencePiece sees "a b" → [261, 268].
  EXPECT_EQ(tok->piece(261), " a");
  EXPECT_EQ(tok->piece(410), " ");
  EXPECT_EQ(tok->piece(268), " b");
  EXPECT_EQ(tok->encode("a  b", false, false), (std::vector<int>{261, 410, 268}));
}

TEST(LlamaTokenizer, Tok512WholeSampleMatchesSentencePiece) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  NANOSERVE_REQUIRE_DATA(sample_path, "tinystories_valid_sample.txt");
  const auto tok = load_llama2c_tokenizer(path, 512);
  const nlohmann::json ref = read_fixture("tok512_sentencepiece_reference.json")["sample"];
  const auto docs = testing::split_documents(testing::read_text(sample_path), ref["separator"]);
  ASSERT_EQ(docs.size(), ref["documents"].get<size_t>());
  std::vector<int> all;
  for (const std::string& doc : docs) {
    const std::vector<int> ids = tok->encode(collapse_spaces(doc), false, false);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), ref["tokens"].get<size_t>());
  EXPECT_EQ(fnv1a64(all), ref["fnv1a64_of_ids"].get<std::string>());
}

// run.c hard-codes byte fallback as id = byte + 3 and BOS/EOS as 1/2; the class finds bytes
// through their "<0xXX>" pieces. Both real vocabularies put them where run.c expects.
TEST(LlamaTokenizer, RealVocabulariesHaveRunCLayout) {
  for (const auto& [name, size] : kVocabs) {
    NANOSERVE_REQUIRE_DATA(path, name);
    const auto tok = load_llama2c_tokenizer(path, size);
    EXPECT_EQ(tok->vocab_size(), size);
    EXPECT_EQ(tok->piece(0), "<unk>");
    EXPECT_EQ(tok->piece(1), "\n<s>\n");  // llama2.c's export writes BOS/EOS like this
    EXPECT_EQ(tok->piece(2), "\n</s>\n");
    for (int b = 0; b < 256; ++b) {
      char expect[8];
      std::snprintf(expect, sizeof expect, "<0x%02X>", b);
      ASSERT_EQ(tok->piece(b + 3), expect);
      // A lone invalid byte is never a piece, so it must fall back to its byte token.
      if (b >= 0x80) {
        EXPECT_EQ(tok->encode(std::string(1, char(b)), false, false).back(), b + 3);
      }
    }
  }
}

// Ids that the Llama-2 SentencePiece tokenizer is widely documented to produce (e.g.
// "Hello world" → [1, 15043, 3186]); each is also checkable by hand from the pieces.
TEST(LlamaTokenizer, Llama2VocabularyGivesPublishedIds) {
  NANOSERVE_REQUIRE_DATA(path, "tokenizer.bin");
  const auto tok = load_llama2c_tokenizer(path, 32000);
  EXPECT_EQ(tok->encode("Hello world", true, false), (std::vector<int>{1, 15043, 3186}));
  EXPECT_EQ(tok->piece(15043), " Hello");
  EXPECT_EQ(tok->encode("Once upon a time", false, false),
            (std::vector<int>{9038, 2501, 263, 931}));
  // Llama-2 was trained with split_digits: every digit is its own piece, after a lone " ".
  EXPECT_EQ(tok->encode("42", false, false), (std::vector<int>{29871, 29946, 29906}));
  EXPECT_EQ(tok->piece(29871), " ");
  EXPECT_EQ(tok->piece(29946), "4");
  // An emoji is not in the vocabulary: " " then its 4 UTF-8 bytes F0 9F 98 80 as byte+3.
  EXPECT_EQ(tok->encode("😀", false, false),
            (std::vector<int>{29871, 0xF0 + 3, 0x9F + 3, 0x98 + 3, 0x80 + 3}));
  EXPECT_EQ(tok->decode(tok->encode("😀", true, false)), "😀");
}

TEST(LlamaTokenizer, EmptyTextHasNoDummyPrefix) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  const auto tok = load_llama2c_tokenizer(path, 512);
  EXPECT_TRUE(tok->encode("", false, false).empty());
  EXPECT_EQ(tok->encode("", true, true), (std::vector<int>{1, 2}));
  EXPECT_EQ(tok->encode("a", true, true), (std::vector<int>{1, 261, 2}));
}

// decode(encode(x)) == x for every document: the dummy-prefix space is the one the decoder
// strips after BOS (and `decode` treats the start as following BOS), byte tokens give back
// their bytes. This holds for any bytes at all, valid UTF-8 or not, since every byte has a
// "<0xXX>" piece and " " is a piece.
TEST(LlamaTokenizer, RoundTripsTheWholeSample) {
  NANOSERVE_REQUIRE_DATA(sample_path, "tinystories_valid_sample.txt");
  const std::string sample = testing::read_text(sample_path);
  for (const auto& [name, size] : kVocabs) {
    NANOSERVE_REQUIRE_DATA(path, name);
    const auto tok = load_llama2c_tokenizer(path, size);
    for (const std::string& doc : testing::split_documents(sample, "\n<|endoftext|>\n")) {
      ASSERT_EQ(tok->decode(tok->encode(doc, true, true)), doc) << name;
    }
    EXPECT_EQ(tok->decode(tok->encode(sample, false, false)), sample) << name;
    const char kOdd[] = "  lead\xff\xfe\x80 trail\0 é";  // invalid UTF-8, NUL, extra spaces
    const std::string odd(kOdd, sizeof kOdd - 1);
    EXPECT_EQ(tok->decode(tok->encode(odd, false, false)), odd) << name;
  }
}

TEST(LlamaTokenizer, HeapMergingEqualsRunCLoop) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  NANOSERVE_REQUIRE_DATA(sample_path, "tinystories_valid_sample.txt");
  const auto tok = load_llama2c_tokenizer(path, 512);
  const auto docs =
      testing::split_documents(testing::read_text(sample_path), "\n<|endoftext|>\n");
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(tok->encode(docs[i], false, false), testing::naive_llama_encode(*tok, docs[i]));
  }
  // Random texts over an alphabet rich in ties and byte fallback: repeated letters, spaces,
  // multi-byte characters in and out of the vocabulary, stray continuation bytes.
  const std::vector<std::string> alphabet = {"a", "e", "t", "h", " ", "  ", "ll", "é", "😀",
                                             "\x80", "\xC3", "\n", ".", "the"};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const std::string text = testing::random_text(seed, 1 + seed * 7, alphabet);
    ASSERT_EQ(tok->encode(text, false, false), testing::naive_llama_encode(*tok, text)) << seed;
  }
}

TEST(LlamaTokenizer, DecodeStripsLeadingSpaceOnlyAfterBos) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  const auto tok = load_llama2c_tokenizer(path, 512);
  EXPECT_EQ(tok->decode_token(1, 261), "a");    // " a" right after BOS
  EXPECT_EQ(tok->decode_token(261, 261), " a");
  EXPECT_EQ(tok->decode_token(261, 'A' + 3), "A");  // "<0x41>" is the byte 'A'
  EXPECT_EQ(tok->decode_token(1, 1), "\n<s>\n");  // a single token decodes to its piece …
  // A sequence skips BOS/EOS, and each BOS starts a new text whose dummy space goes too.
  EXPECT_EQ(tok->decode({1, 261, 268, 2}), "a b");
  EXPECT_EQ(tok->decode({1, 261, 2, 1, 268}), "ab");
}

TEST(LlamaTokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  NANOSERVE_REQUIRE_DATA(path, "tok512.bin");
  const auto tok = load_llama2c_tokenizer(path, 512);
  EXPECT_THROW(tok->decode_token(1, 512), InvalidArgument);
  EXPECT_THROW(tok->decode_token(1, -1), InvalidArgument);
  EXPECT_THROW(tok->decode({261, 100000}), InvalidArgument);
  EXPECT_THROW(tok->piece(512), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
