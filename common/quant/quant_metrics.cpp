#include "common/quant/quant_metrics.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/oracle/forward.h"

namespace nanoserve::quant {

namespace {

/// log softmax of one row in fp64.
std::vector<double> log_softmax(const float* row, int n) {
  double max = row[0];
  for (int i = 1; i < n; ++i) max = std::max(max, double(row[i]));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(double(row[i]) - max);
  const double log_z = max + std::log(sum);
  std::vector<double> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[size_t(i)] = double(row[i]) - log_z;
  return out;
}

}  // namespace

eval::EvalResult evaluate_documents(const Model& model, const Tokenizer& tokenizer,
                                    std::string_view text, DocumentRange range,
                                    const eval::EvalOptions& options) {
  return eval::evaluate_text(select_documents(text, range, options.delimiter), tokenizer,
                             eval::oracle_logits(model), options);
}

double mean_kl_divergence(const Model& reference, const Model& candidate,
                          const std::vector<std::vector<int>>& sequences) {
  const int vocab = reference.config.vocab_size;
  if (candidate.config.vocab_size != vocab) {
    throw InvalidArgument("mean_kl_divergence: vocabularies differ (" + std::to_string(vocab) +
                          " vs " + std::to_string(candidate.config.vocab_size) + ")");
  }
  double total = 0;
  int64_t positions = 0;
  for (const std::vector<int>& tokens : sequences) {
    const std::vector<float> p = oracle::forward_prompt(reference, tokens);  // (T, vocab)
    const std::vector<float> q = oracle::forward_prompt(candidate, tokens);  // (T, vocab)
    for (size_t t = 0; t < tokens.size(); ++t) {
      const std::vector<double> lp = log_softmax(p.data() + t * size_t(vocab), vocab);
      const std::vector<double> lq = log_softmax(q.data() + t * size_t(vocab), vocab);
      double kl = 0;
      for (int i = 0; i < vocab; ++i) kl += std::exp(lp[size_t(i)]) * (lp[size_t(i)] - lq[size_t(i)]);
      total += kl;
      ++positions;
    }
  }
  return positions > 0 ? total / double(positions) : 0.0;
}

std::vector<LayerError> layer_output_errors(const Model& reference, const Model& candidate,
                                            const std::vector<BlockStats>& stats,
                                            const std::vector<AwqLayerReport>* awq) {
  const ModelConfig& c = reference.config;
  if (int(stats.size()) != c.n_layers || (awq && int(awq->size()) != c.n_layers)) {
    throw InvalidArgument("layer_output_errors: statistics for " + std::to_string(stats.size()) +
                          " blocks, the model has " + std::to_string(c.n_layers));
  }
  using LI = oracle::LinearInput;
  std::vector<LayerError> errors;
  for (int l = 0; l < c.n_layers; ++l) {
    for (LinearId id : kLinearIds) {
      const int rows = linear_rows(c, id), cols = linear_cols(c, id);
      const std::vector<float>& w = linear_weights(reference.layers[size_t(l)], id);
      std::vector<float> w_hat = linear_weights(candidate.layers[size_t(l)], id);  // (rows, cols)
      if (awq) {
        // Back to the reference's coordinates: Ŵ_eff = diag(s_out) Ŵ diag(1/s_in).
        const auto& scales = (*awq)[size_t(l)].input_scales;
        const std::vector<float>& s_in = scales[size_t(linear_input(id))];
        const std::vector<float>* s_out = nullptr;
        if (id == LinearId::kWv && !scales[size_t(LI::kAttentionOut)].empty()) s_out = &scales[size_t(LI::kAttentionOut)];
        if (id == LinearId::kW3 && !scales[size_t(LI::kFfnHidden)].empty()) s_out = &scales[size_t(LI::kFfnHidden)];
        for (int r = 0; r < rows; ++r) {
          for (int k = 0; k < cols; ++k) {
            float& x = w_hat[size_t(int64_t(r) * cols + k)];
            if (!s_in.empty()) x /= s_in[size_t(k)];
            if (s_out) x *= (*s_out)[size_t(r)];
          }
        }
      }
      const Eigen::MatrixXd& gram = stats[size_t(l)][linear_input(id)].gram;
      const std::vector<float> zero(w.size(), 0.0f);
      LayerError e;
      e.layer = l;
      e.linear = id;
      e.error = output_error(w.data(), w_hat.data(), rows, gram);
      e.reference = output_error(w.data(), zero.data(), rows, gram);
      errors.push_back(e);
    }
  }
  return errors;
}

double mean_relative_error(const std::vector<LayerError>& errors) {
  if (errors.empty()) return 0.0;
  double sum = 0;
  for (const LayerError& e : errors) sum += e.relative();
  return sum / double(errors.size());
}

std::vector<ActivationOutliers> activation_outliers(const std::vector<BlockStats>& stats) {
  std::vector<ActivationOutliers> out;
  for (size_t l = 0; l < stats.size(); ++l) {
    for (size_t i = 0; i < stats[l].inputs.size(); ++i) {
      const InputStats& s = stats[l].inputs[i];
      const Eigen::VectorXd mean_abs = s.mean_abs();
      const double mean = mean_abs.mean();
      ActivationOutliers a;
      a.layer = int(l);
      a.input = oracle::LinearInput(i);
      a.mean_ratio = mean > 0 ? mean_abs.maxCoeff() / mean : 0.0;
      a.peak_ratio = mean > 0 ? s.abs_max.maxCoeff() / mean : 0.0;
      out.push_back(a);
    }
  }
  return out;
}

}  // namespace nanoserve::quant
