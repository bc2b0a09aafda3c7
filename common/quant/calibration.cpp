#include "common/quant/calibration.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace nanoserve::quant {

std::string select_documents(std::string_view text, DocumentRange range,
                             std::string_view delimiter) {
  const std::vector<std::string_view> docs = eval::split_documents(text, delimiter);
  if (range.first < 0 || range.count <= 0 ||
      int64_t(range.first) + range.count > int64_t(docs.size())) {
    throw InvalidArgument("select_documents: documents " + std::to_string(range.first) + ".." +
                          std::to_string(int64_t(range.first) + range.count - 1) +
                          " requested, the text has " + std::to_string(docs.size()));
  }
  std::string out;
  for (int i = range.first; i < range.first + range.count; ++i) {
    if (i > range.first) out += delimiter;
    out += docs[size_t(i)];
  }
  return out;
}

std::vector<std::vector<int>> calibration_sequences(std::string_view text,
                                                    const Tokenizer& tokenizer, int max_tokens,
                                                    std::string_view delimiter) {
  if (max_tokens < 2) {
    throw InvalidArgument("calibration_sequences: max_tokens " + std::to_string(max_tokens) +
                          " < 2 (BOS plus one token)");
  }
  std::vector<std::vector<int>> sequences;
  for (const std::string_view doc : eval::split_documents(text, delimiter)) {
    std::vector<int> ids = tokenizer.encode(doc, /*add_bos=*/true, /*add_eos=*/false);
    if (int(ids.size()) > max_tokens) ids.resize(size_t(max_tokens));
    if (ids.size() >= 2) sequences.push_back(std::move(ids));
  }
  if (sequences.empty()) throw InvalidArgument("calibration_sequences: the text has no documents");
  return sequences;
}

InputStats::InputStats(int cols)
    : gram(Eigen::MatrixXd::Zero(cols, cols)),
      abs_sum(Eigen::VectorXd::Zero(cols)),
      abs_max(Eigen::VectorXd::Zero(cols)) {}

void InputStats::add(const float* x, int n) {
  if (n <= 0) return;
  using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::MatrixXd xd =
      Eigen::Map<const RowMatrixF>(x, n, gram.cols()).cast<double>();  // (n, cols)
  gram.selfadjointView<Eigen::Lower>().rankUpdate(xd.transpose());    // lower half += Xᵀ X
  gram.triangularView<Eigen::StrictlyUpper>() = gram.transpose();     // keep it symmetric
  abs_sum += xd.cwiseAbs().colwise().sum().transpose();
  abs_max = abs_max.cwiseMax(xd.cwiseAbs().colwise().maxCoeff().transpose());
  rows += n;
}

Eigen::MatrixXd InputStats::hessian() const {
  if (rows == 0) return Eigen::MatrixXd::Zero(gram.rows(), gram.cols());
  return gram * (2.0 / double(rows));
}

Eigen::VectorXd InputStats::mean_abs() const {
  if (rows == 0) return Eigen::VectorXd::Zero(abs_sum.size());
  return abs_sum / double(rows);
}

double output_error(const float* w, const float* w_hat, int rows, const Eigen::MatrixXd& gram) {
  const int cols = int(gram.cols());
  using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::MatrixXd delta = (Eigen::Map<const RowMatrixF>(w, rows, cols).cast<double>() -
                                 Eigen::Map<const RowMatrixF>(w_hat, rows, cols).cast<double>());
  return (delta * gram).cwiseProduct(delta).sum();  // Σ_r Δ_r G Δ_rᵀ
}

namespace {
/// Thrown by the hook once the last wanted block is done; never escapes this file.
struct StopPass {};
}  // namespace

std::vector<BlockStats> collect_block_stats(const Model& model,
                                            const std::vector<std::vector<int>>& sequences,
                                            int first_layer, int last_layer) {
  const ModelConfig& c = model.config;
  if (first_layer < 0 || last_layer >= c.n_layers || first_layer > last_layer) {
    throw InvalidArgument("collect_block_stats: layers " + std::to_string(first_layer) + ".." +
                          std::to_string(last_layer) + " outside 0.." +
                          std::to_string(c.n_layers - 1));
  }
  std::vector<BlockStats> stats(static_cast<size_t>(last_layer - first_layer + 1));
  for (BlockStats& b : stats) {
    b[oracle::LinearInput::kAttention] = InputStats(c.dim);
    b[oracle::LinearInput::kAttentionOut] = InputStats(c.q_dim());
    b[oracle::LinearInput::kFfn] = InputStats(c.dim);
    b[oracle::LinearInput::kFfnHidden] = InputStats(c.hidden_dim);
  }
  oracle::ForwardHooks hooks;
  hooks.on_linear_input = [&](int layer, oracle::LinearInput which, const float* x, int rows,
                              int) {
    if (layer < first_layer || layer > last_layer || which == oracle::LinearInput::kClassifier) return;
    stats[size_t(layer - first_layer)][which].add(x, rows);
  };
  hooks.on_block_output = [&](int layer, const float*, int, int) {
    if (layer == last_layer) throw StopPass{};
  };
  for (const std::vector<int>& tokens : sequences) {
    try {
      oracle::forward_prompt(model, tokens, &hooks);
    } catch (const StopPass&) {
    }
  }
  return stats;
}

}  // namespace nanoserve::quant
