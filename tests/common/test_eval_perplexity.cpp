// Perplexity and bits-per-byte: a model with flat logits must give perplexity == vocab size and
// bits-per-byte == tokens * log2(V) / bytes exactly, whatever the tokenizer or window; the
// document split and the byte count follow the documented rules; bad input is rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/eval/perplexity.h"
#include "eval_test_tokenizers.h"
#include "oracle_test_models.h"
#include "test_support.h"

namespace nanoserve::eval {
namespace {

using nanoserve::testing::ByteTokenizer;
using nanoserve::testing::PairTokenizer;

// Three documents: 5 bytes, 7 bytes ("café" has a two-byte é, then "\nx"), 11 bytes.
const std::string kText = "hello\n<|endoftext|>\ncafé\nx\n<|endoftext|>\nworld again\n<|endoftext|>\n";
const int64_t kBytes = 5 + 7 + 11;

// Logits that ignore their input: every row is zeros over `vocab`.
LogitsFn flat_logits(int vocab) {
  return [vocab](const std::vector<int>& tokens) {
    return std::vector<float>(tokens.size() * size_t(vocab), 0.0f);
  };
}

TEST(EvalDocuments, SplitsOnDelimiterAndDropsEmptyPieces) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(split_documents("a||b||", "||"), (V{"a", "b"}));
  EXPECT_EQ(split_documents("||a||||b", "||"), (V{"a", "b"}));
  EXPECT_EQ(split_documents("no delimiter", "||"), (V{"no delimiter"}));
  EXPECT_EQ(split_documents("", "||"), V{});
  EXPECT_EQ(split_documents("a|b", "||"), (V{"a|b"}));
  EXPECT_THROW(split_documents("a", ""), InvalidArgument);
}

TEST(EvalPerplexity, ZeroClassifierModelGivesPerplexityEqualToVocabSize) {
  // A real oracle model whose classifier is zero: every logit is 0, so each token costs
  // exactly ln V nats whatever came before.
  ModelConfig c = testing::tiny_config();
  c.vocab_size = 258;
  Model m = testing::random_model(c, 21);
  m.classifier.assign(m.classifier.size(), 0.0f);
  const ByteTokenizer tok;
  for (int window : {64, 4}) {
    EvalOptions opt;
    opt.window = window;
    const EvalResult r = evaluate_text(kText, tok, oracle_logits(m), opt);
    EXPECT_EQ(r.documents, 3);
    EXPECT_EQ(r.bytes, kBytes);
    EXPECT_EQ(r.tokens, kBytes) << "one token per byte, each predicted once";
    EXPECT_NEAR(r.perplexity, 258.0, 258.0 * 1e-12);
    EXPECT_NEAR(r.bits_per_byte, std::log2(258.0), 1e-12);
    EXPECT_NEAR(r.nll, kBytes * std::log(258.0), 1e-9);
  }
}

TEST(EvalPerplexity, BitsPerByteUsesTokensAndBytesSeparately) {
  // Two bytes per token: 3 + 4 + 6 tokens for 5 + 7 + 11 bytes.
  const PairTokenizer tok;
  const EvalResult r = evaluate_text(kText, tok, flat_logits(202), EvalOptions{});
  EXPECT_EQ(r.tokens, 13);
  EXPECT_EQ(r.bytes, kBytes);
  EXPECT_NEAR(r.perplexity, 202.0, 202.0 * 1e-12);
  EXPECT_NEAR(r.bits_per_byte, 13 * std::log2(202.0) / double(kBytes), 1e-12);
}

TEST(EvalPerplexity, ScoringEosAddsOneTokenPerDocumentAndNoBytes) {
  const ByteTokenizer tok;
  EvalOptions opt;
  opt.score_eos = true;
  const EvalResult r = evaluate_text(kText, tok, flat_logits(258), opt);
  EXPECT_EQ(r.tokens, kBytes + 3);
  EXPECT_EQ(r.bytes, kBytes);
  EXPECT_NEAR(r.bits_per_byte, (kBytes + 3) * std::log2(258.0) / double(kBytes), 1e-12);
}

TEST(EvalPerplexity, CustomDelimiterAndProgress) {
  const ByteTokenizer tok;
  EvalOptions opt;
  opt.delimiter = "\n\n";
  std::vector<int64_t> done;
  opt.progress = [&](int64_t d, int64_t total) {
    EXPECT_EQ(total, 2);
    done.push_back(d);
  };
  const EvalResult r = evaluate_text("ab\n\ncde", tok, flat_logits(258), opt);
  EXPECT_EQ(r.documents, 2);
  EXPECT_EQ(r.bytes, 5);
  EXPECT_EQ(done, (std::vector<int64_t>{1, 2}));
}

TEST(EvalPerplexity, CountsTheDocumentsAndBytesOfTheTinyStoriesSample) {
  // data/README: 100 stories, 82,843 bytes, each story followed by the 15-byte delimiter.
  NANOSERVE_REQUIRE_DATA(path, "tinystories_valid_sample.txt");
  const ByteTokenizer tok;
  const EvalResult r = evaluate_file(path, tok, flat_logits(258), EvalOptions{});
  EXPECT_EQ(r.documents, 100);
  EXPECT_EQ(r.bytes, 82843 - 100 * 15);
  EXPECT_EQ(r.tokens, r.bytes);
  EXPECT_NEAR(r.bits_per_byte, std::log2(258.0), 1e-9);
}

TEST(EvalPerplexity, RejectsBadOptionsLogitsAndFiles) {
  const ByteTokenizer tok;
  EvalOptions opt;
  opt.window = 1;
  EXPECT_THROW(evaluate_text(kText, tok, flat_logits(258), opt), InvalidArgument);
  opt.window = 8;
  for (int stride : {-1, 8}) {
    opt.stride = stride;
    EXPECT_THROW(evaluate_text(kText, tok, flat_logits(258), opt), InvalidArgument);
  }
  opt.stride = 0;
  opt.delimiter = "";
  EXPECT_THROW(evaluate_text(kText, tok, flat_logits(258), opt), InvalidArgument);
  const EvalOptions ok;
  // Logits too short for the rows, a vocabulary smaller than the token ids, NaN.
  const LogitsFn short_rows = [](const std::vector<int>& t) {
    return std::vector<float>(t.size() * 258 - 1, 0.0f);
  };
  const LogitsFn nan_logits = [](const std::vector<int>& t) {
    return std::vector<float>(t.size() * 258, std::numeric_limits<float>::quiet_NaN());
  };
  EXPECT_THROW(evaluate_text(kText, tok, short_rows, ok), InvalidArgument);
  EXPECT_THROW(evaluate_text(kText, tok, flat_logits(100), ok), InvalidArgument);
  EXPECT_THROW(evaluate_text(kText, tok, nan_logits, ok), InvalidArgument);
  EXPECT_THROW(evaluate_file("/nonexistent/valid.txt", tok, flat_logits(258), ok), LoadError);
  // A window longer than the oracle model's context: forward_prompt refuses it.
  ModelConfig c = testing::tiny_config();
  c.vocab_size = 258;
  c.max_seq_len = 4;
  const Model m = testing::random_model(c, 22);
  opt = EvalOptions{};
  opt.window = 16;
  EXPECT_THROW(evaluate_text(kText, tok, oracle_logits(m), opt), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::eval
