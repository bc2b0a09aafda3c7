#pragma once
/// \file
/// \brief Calibration data: which documents of the text sample calibrate and which evaluate,
/// and the statistics of every linear layer's inputs gathered by running the oracle on them.
///
/// **The split.** `tinystories_valid_sample.txt` holds 100 stories. Documents 0..79 are the
/// evaluation slice (perplexity, KL), documents 80..99 the calibration slice (GPTQ's Hessians,
/// AWQ's activation magnitudes): a method is never scored on the text it was fitted to. Tests
/// use sub-ranges of the same two slices for speed, never documents of the other slice.
///
/// **The statistics.** For a linear layer with inputs x (one row per calibration token), all
/// three methods need only
///
///     G = Σ x xᵀ            (cols, cols)  GPTQ's H = 2G/N; the output error of any weight
///                                         change ΔW is ‖ΔW X‖² = Σ_r Δw_r G Δw_rᵀ
///     mean |x_c|, max |x_c|  (cols)        AWQ's per-channel activation magnitude; outliers
///
/// so the rows themselves are never stored, and AWQ's search costs out·in² per candidate
/// instead of out·in·N.

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/eval/documents.h"
#include "common/model.h"
#include "common/oracle/forward.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::quant {

/// \brief Documents [first, first + count) of a text of documents.
struct DocumentRange {
  int first = 0;  ///< index of the first document
  int count = 0;  ///< number of documents
};

/// \brief The evaluation slice of the text sample: documents 0..79.
inline constexpr DocumentRange kEvaluationDocuments{0, 80};
/// \brief The calibration slice of the text sample: documents 80..99.
inline constexpr DocumentRange kCalibrationDocuments{80, 20};
/// \brief Most tokens (BOS included) of one calibration sequence; longer documents are cut.
inline constexpr int kCalibrationMaxTokens = 256;

/// \brief The documents of `range` in `text`, joined by `delimiter` again (so that
/// `eval::evaluate_text` scores exactly them). Throws `InvalidArgument` when the text has
/// fewer than `range.first + range.count` documents or the range is empty.
std::string select_documents(std::string_view text, DocumentRange range,
                             std::string_view delimiter = eval::kDefaultDelimiter);

/// \brief Token sequences for calibration: each document of `text` (split by `delimiter`)
/// encoded with BOS, cut to at most `max_tokens` tokens.
std::vector<std::vector<int>> calibration_sequences(
    std::string_view text, const Tokenizer& tokenizer, int max_tokens = kCalibrationMaxTokens,
    std::string_view delimiter = eval::kDefaultDelimiter);

/// \brief Running statistics of one linear layer's input rows (see the file comment).
struct InputStats {
  int64_t rows = 0;         ///< rows (tokens) seen, N
  Eigen::MatrixXd gram;     ///< (cols, cols) Σ x xᵀ
  Eigen::VectorXd abs_sum;  ///< (cols) Σ |x_c|
  Eigen::VectorXd abs_max;  ///< (cols) max |x_c|

  /// \brief Empty statistics for inputs of width `cols`.
  explicit InputStats(int cols = 0);
  /// \brief Adds `n` rows `x` (n, cols) row-major.
  void add(const float* x, int n);
  /// \brief GPTQ's H = 2G/N (cols, cols); zero when no rows were added.
  Eigen::MatrixXd hessian() const;
  /// \brief AWQ's per-channel activation magnitude mean |x_c| (cols).
  Eigen::VectorXd mean_abs() const;
};

/// \brief The output error of replacing W by Ŵ (both (rows, cols) row-major) on inputs with
/// Gram matrix `gram` = Σ x xᵀ (cols, cols): ‖W X − Ŵ X‖² = Σ_r (w_r − ŵ_r) G (w_r − ŵ_r)ᵀ,
/// in fp64.
double output_error(const float* w, const float* w_hat, int rows, const Eigen::MatrixXd& gram);

/// \brief The input statistics of one transformer block, indexed by `oracle::LinearInput`
/// (kAttention: wq/wk/wv, kAttentionOut: wo, kFfn: w1/w3, kFfnHidden: w2).
struct BlockStats {
  std::array<InputStats, 4> inputs;  ///< by LinearInput (kClassifier excluded)
  /// \brief Statistics of the input `which` (not kClassifier).
  const InputStats& operator[](oracle::LinearInput which) const { return inputs[size_t(which)]; }
  /// \brief Mutable access to the statistics of `which`.
  InputStats& operator[](oracle::LinearInput which) { return inputs[size_t(which)]; }
};

/// \brief Runs `model` on every sequence and gathers the linear-layer input statistics of
/// blocks `first_layer .. last_layer` (inclusive). The pass stops after `last_layer` (a hook
/// cannot otherwise end an oracle pass early, so it throws a private exception that this
/// function catches), which skips the later blocks and the classifier.
std::vector<BlockStats> collect_block_stats(const Model& model,
                                            const std::vector<std::vector<int>>& sequences,
                                            int first_layer, int last_layer);

}  // namespace nanoserve::quant
