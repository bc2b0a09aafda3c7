// Calibration data and the comparison metrics (common/quant/calibration.h, quant_metrics.h):
// document slices, input statistics against explicit sums, the early-stopping pass against a
// full one, KL and layer errors on cases with known answers.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "common/oracle/forward.h"
#include "common/oracle/ops.h"
#include "common/quant/awq.h"
#include "common/quant/calibration.h"
#include "common/quant/quant_metrics.h"
#include "common/tokenizer/byte_tokenizer.h"
#include "quant_test_support.h"
#include "test_support.h"

namespace nanoserve::quant {
namespace {

using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

TEST(QuantCalibration, SelectDocumentsJoinsTheRequestedSlice) {
  const std::string text = "a\n<|endoftext|>\nbb\n<|endoftext|>\nccc\n<|endoftext|>\n";
  EXPECT_EQ(select_documents(text, {1, 2}), "bb\n<|endoftext|>\nccc");
  EXPECT_EQ(select_documents(text, {0, 1}), "a");
  EXPECT_THROW(select_documents(text, {2, 2}), InvalidArgument);
  EXPECT_THROW(select_documents(text, {0, 0}), InvalidArgument);
}

TEST(QuantCalibration, EvaluationAndCalibrationSlicesSplitTheSampleWithoutOverlap) {
  EXPECT_LE(kEvaluationDocuments.first + kEvaluationDocuments.count, kCalibrationDocuments.first);
  NANOSERVE_REQUIRE_DATA(path, "tinystories_valid_sample.txt");
  const std::string text = eval::read_text_file(path);
  // The data README: 100 stories, so 0..79 and 80..99 use every one exactly once.
  EXPECT_EQ(eval::split_documents(text, eval::kDefaultDelimiter).size(),
            size_t(kCalibrationDocuments.first + kCalibrationDocuments.count));
}

TEST(QuantCalibration, SequencesStartWithBosAndAreCut) {
  const ByteTokenizer tok(259);
  const auto seqs = calibration_sequences("hello\n<|endoftext|>\nab", tok, 4);
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(seqs[0], (std::vector<int>{tok.bos_id(), 3 + 'h', 3 + 'e', 3 + 'l'}));
  EXPECT_EQ(seqs[1], (std::vector<int>{tok.bos_id(), 3 + 'a', 3 + 'b'}));
}

TEST(QuantCalibration, InputStatsEqualExplicitSums) {
  const int n = 37, cols = 6;
  const std::vector<float> x = testing::random_weights(1, size_t(n * cols));
  InputStats s(cols);
  s.add(x.data(), 20);  // in two chunks
  s.add(x.data() + 20 * cols, n - 20);
  const Eigen::MatrixXd X = Eigen::Map<const RowMatrixF>(x.data(), n, cols).cast<double>();
  EXPECT_EQ(s.rows, n);
  EXPECT_LT((s.gram - X.transpose() * X).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((s.hessian() - 2.0 / n * X.transpose() * X).cwiseAbs().maxCoeff(), 1e-12);
  for (int c = 0; c < cols; ++c) {
    EXPECT_NEAR(s.mean_abs()[c], X.col(c).cwiseAbs().mean(), 1e-12);
    EXPECT_EQ(s.abs_max[c], X.col(c).cwiseAbs().maxCoeff());
  }
}

TEST(QuantCalibration, OutputErrorIsTheSquaredNormOfTheOutputDifference) {
  const int rows = 5, cols = 8, n = 30;
  const std::vector<float> x = testing::random_weights(2, size_t(n * cols));
  const std::vector<float> w = testing::random_weights(3, size_t(rows * cols));
  const std::vector<float> v = testing::random_weights(4, size_t(rows * cols));
  InputStats s(cols);
  s.add(x.data(), n);
  const Eigen::MatrixXd X = Eigen::Map<const RowMatrixF>(x.data(), n, cols).cast<double>();
  const Eigen::MatrixXd D = Eigen::Map<const RowMatrixF>(w.data(), rows, cols).cast<double>() -
                            Eigen::Map<const RowMatrixF>(v.data(), rows, cols).cast<double>();
  const double want = (X * D.transpose()).squaredNorm();
  EXPECT_NEAR(output_error(w.data(), v.data(), rows, s.gram), want, 1e-9 * want);
}

TEST(QuantCalibration, EarlyStoppingPassSeesTheSameInputsAsAFullPass) {
  const Model m = testing::small_model(2);
  const auto seqs = testing::random_sequences(9, 3, 20, m.config.vocab_size);
  const std::vector<BlockStats> both = collect_block_stats(m, seqs, 0, 1);
  const std::vector<BlockStats> first = collect_block_stats(m, seqs, 0, 0);
  const std::vector<BlockStats> second = collect_block_stats(m, seqs, 1, 1);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(first[0].inputs[i].gram, both[0].inputs[i].gram) << i;
    EXPECT_EQ(second[0].inputs[i].gram, both[1].inputs[i].gram) << i;
    EXPECT_EQ(both[1].inputs[i].rows, 60);
  }
  // Layer 0's attention input is rmsnorm(embedding) · attn_norm, computed here with the ops.
  InputStats want(m.config.dim);
  for (const auto& tokens : seqs) {
    std::vector<float> e(tokens.size() * size_t(m.config.dim)), xn(e.size());
    oracle::embedding(m.token_embedding.data(), m.config.vocab_size, m.config.dim, tokens.data(),
                      int(tokens.size()), e.data());
    oracle::rmsnorm(e.data(), m.layers[0].attn_norm.data(), int(tokens.size()), m.config.dim,
                    m.config.norm_eps, xn.data());
    want.add(xn.data(), int(tokens.size()));
  }
  EXPECT_LT((want.gram - both[0][oracle::LinearInput::kAttention].gram).cwiseAbs().maxCoeff(), 1e-9);
}

TEST(QuantMetrics, KlIsZeroForTheSameModelAndLogVMinusEntropyAgainstUniform) {
  const Model m = testing::small_model(2);
  const auto seqs = testing::random_sequences(10, 2, 12, m.config.vocab_size);
  EXPECT_EQ(mean_kl_divergence(m, m, seqs), 0.0);
  Model flat = m;  // a zero classifier: every logit 0, the uniform distribution
  std::fill(flat.classifier.begin(), flat.classifier.end(), 0.0f);
  double want = 0;
  const int vocab = m.config.vocab_size;
  for (const auto& tokens : seqs) {
    const std::vector<float> logits = oracle::forward_prompt(m, tokens);
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::vector<float> p(logits.begin() + long(t * vocab), logits.begin() + long((t + 1) * vocab));
      oracle::softmax(p.data(), 1, vocab, p.data());
      double neg_entropy = 0;
      for (float pi : p) neg_entropy += pi > 0 ? double(pi) * std::log(double(pi)) : 0.0;
      want += neg_entropy + std::log(double(vocab));  // KL(p || uniform)
    }
  }
  want /= 24;
  EXPECT_NEAR(mean_kl_divergence(m, flat, seqs), want, 1e-5 * want);
}

TEST(QuantMetrics, LayerErrorLandsOnThePerturbedLinearOnly) {
  const Model m = testing::small_model(2);
  const auto seqs = testing::random_sequences(11, 2, 16, m.config.vocab_size);
  const auto stats = collect_block_stats(m, seqs, 0, 1);
  Model p = m;
  p.layers[1].w2[3 * 96 + 5] += 0.5f;  // row 3, column 5 of w2 (dim, hidden 96)
  const auto errors = layer_output_errors(m, p, stats);
  ASSERT_EQ(errors.size(), 14u);
  for (const LayerError& e : errors) {
    if (e.layer == 1 && e.linear == LinearId::kW2) {
      const double g55 = stats[1][oracle::LinearInput::kFfnHidden].gram(5, 5);
      EXPECT_NEAR(e.error, 0.25 * g55, 1e-6 * g55);  // ‖0.5 · x_5‖² summed over rows
      EXPECT_GT(e.reference, 0.0);
    } else {
      EXPECT_EQ(e.error, 0.0) << e.layer << " " << to_string(e.linear);
    }
  }
}

TEST(QuantMetrics, AwqScalesAreUndoneBeforeComparing) {
  const Model m = testing::small_model(4);  // multi-head: wv -> wo is scaled too
  const auto seqs = testing::random_sequences(12, 3, 24, m.config.vocab_size);
  const auto stats = collect_block_stats(m, seqs, 0, 1);
  Model t = m;
  std::vector<AwqLayerReport> reports;
  AwqOptions o;
  o.clip = false;
  for (int l = 0; l < 2; ++l) reports.push_back(awq_transform_layer(t, l, stats[size_t(l)], {4, 32, true}, o));
  ASSERT_FALSE(reports[0].input_scales[size_t(oracle::LinearInput::kAttentionOut)].empty());
  // The transformed fp32 weights differ, but in the original coordinates they are the same.
  EXPECT_NE(t.layers[0].wv, m.layers[0].wv);
  for (const LayerError& e : layer_output_errors(m, t, stats, &reports)) {
    EXPECT_LT(e.relative(), 1e-10) << e.layer << " " << to_string(e.linear);
  }
}

TEST(QuantMetrics, OutlierRatiosCompareTheLargestChannelWithTheMean) {
  BlockStats b;
  for (int i = 0; i < 4; ++i) b.inputs[size_t(i)] = InputStats(4);
  const float rows[2][4] = {{1, -1, 1, 5}, {-1, 1, -1, -5}};
  b.inputs[0].add(&rows[0][0], 2);
  const auto out = activation_outliers({b});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_DOUBLE_EQ(out[0].mean_ratio, 5.0 / 2.0);  // channel means 1 1 1 5, mean 2
  EXPECT_DOUBLE_EQ(out[0].peak_ratio, 5.0 / 2.0);
}

}  // namespace
}  // namespace nanoserve::quant
