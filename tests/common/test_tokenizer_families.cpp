// Byte-level and SentencePiece-style HfBpeTokenizer against the Hugging Face `tokenizers`
// library itself: for each family of tests/data/tokenizers/ (SmolLM2, GPT-2, Llama 3, Qwen2,
// TinyLlama, and TinyLlama's vocabulary behind a Metaspace pre-tokenizer), the ids and decodings it produced on TinyStories documents and an adversarial
// set (scripts/make_tokenizer_fixtures.mjs). NANOSERVE_TOKENIZER_CASES names another cases
// file to check (the peer test writes fresh random ones with the live library).

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/utf8.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

std::string family_dir(const std::string& family) {
  return testing::fixture_path("tokenizers/" + family);
}

// Every case: the library's ids and its decoding of them; and for byte-level families, whose
// alphabet covers every byte, decode(encode(text)) is the text itself (after the lossy UTF-8
// repair, and NFC where the tokenizer normalizes).
void expect_family_matches(const std::string& family, const std::string& cases_file) {
  const auto tok = load_hf_tokenizer(family_dir(family) + "/tokenizer.json");
  const nlohmann::json cases = nlohmann::json::parse(testing::read_text(cases_file))["cases"];
  ASSERT_GT(cases.size(), 10u) << cases_file;
  const bool byte_level = family != "tinyllama" && family.rfind("metaspace", 0) != 0;
  for (const auto& c : cases) {
    const std::string text = c.contains("hex") ? from_hex(c["hex"]) : c["text"].get<std::string>();
    const std::string shown = c.contains("hex") ? "hex " + c["hex"].get<std::string>() : text;
    const auto ids = c["ids"].get<std::vector<int>>();
    const std::vector<int> got = tok->encode(text, false, false);
    EXPECT_EQ(got, ids) << family << ": " << shown;
    EXPECT_EQ(tok->decode_all(ids), c["decoded"].get<std::string>()) << family << ": " << shown;
    if (byte_level) {
      EXPECT_EQ(tok->decode_all(got), tok->normalize(utf8_lossy(text))) << family << ": " << shown;
    }
  }
}

class TokenizerFamily : public ::testing::TestWithParam<const char*> {};

TEST_P(TokenizerFamily, IdsAndDecodingsEqualTokenizersLibrary) {
  expect_family_matches(GetParam(), family_dir(GetParam()) + "/cases.json");
}

TEST_P(TokenizerFamily, LiveLibraryCasesWhenGiven) {
  const char* dir = std::getenv("NANOSERVE_TOKENIZER_CASES");
  if (!dir) GTEST_SKIP() << "NANOSERVE_TOKENIZER_CASES not set (the peer test sets it)";
  expect_family_matches(GetParam(), std::string(dir) + "/" + GetParam() + "/random_cases.json");
}

INSTANTIATE_TEST_SUITE_P(Families, TokenizerFamily,
                         ::testing::Values("smollm2", "gpt2", "llama3", "qwen2", "tinyllama",
                                           "metaspace_first", "metaspace_split"));

// Metaspace: "first" prepends "▁" only at the start of the text, "always" also after a special
// token; streamed decoding gives the text the whole-sequence decoder gives (the Metaspace
// decoder drops the first token's "▁" only right after BOS).
TEST(MetaspaceTokenizer, PrependSchemeDecidesTheSpaceAfterASpecialToken) {
  const auto first = load_hf_tokenizer(family_dir("metaspace_first") + "/tokenizer.json");
  const auto always = load_hf_tokenizer(family_dir("metaspace_split") + "/tokenizer.json");
  const std::vector<int> a = first->encode("<s>Hello", false, false);
  const std::vector<int> b = always->encode("<s>Hello", false, false);
  ASSERT_EQ(a.front(), 1);
  ASSERT_EQ(b.front(), 1);
  EXPECT_NE(first->piece(a[1]).rfind("\xE2\x96\x81", 0), 0u);  // no "▁" after <s>
  EXPECT_EQ(always->piece(b[1]).rfind("\xE2\x96\x81", 0), 0u);
  EXPECT_EQ(first->encode("Hello", false, false), always->encode("Hello", false, false));
  for (const auto* tok : {first.get(), always.get()}) {
    const std::vector<int> ids = tok->encode("Once upon a time, a cat sat.", true, false);
    std::string streamed;
    for (size_t i = 1; i < ids.size(); ++i) streamed += tok->decode_token(ids[i - 1], ids[i]);
    EXPECT_EQ(streamed, "Once upon a time, a cat sat.");
    EXPECT_EQ(tok->decode(ids), streamed);
  }
}

// A byte-level text round-trips exactly through decode even when the bytes of one character
// are spread over several tokens; streaming decode_token returns those raw bytes.
TEST(ByteLevelTokenizer, StreamedTokensConcatenateToTheText) {
  const auto tok = load_hf_tokenizer(family_dir("llama3") + "/tokenizer.json");
  const std::string text = "日本 😀 café\n\tx";
  const std::vector<int> ids = tok->encode(text, false, false);
  std::string streamed;
  int prev = tok->bos_id();
  for (int id : ids) {
    streamed += tok->decode_token(prev, id);
    prev = id;
  }
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(tok->decode(ids), text);
}

TEST(ByteLevelTokenizer, QwenHasNoBosAndAddsNone) {
  const auto tok = load_hf_tokenizer(family_dir("qwen2") + "/tokenizer.json");
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_EQ(tok->encode("hi", true, false), tok->encode("hi", false, false));
  EXPECT_TRUE(tok->is_special(tok->eos_id()));
}

}  // namespace
}  // namespace nanoserve
