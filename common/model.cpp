#include "common/model.h"

#include <cmath>

#include "common/error.h"

namespace nanoserve {

namespace {
void check_tensor(const std::string& source, const std::string& name,
                  const std::vector<float>& t, int64_t expected) {
  if (static_cast<int64_t>(t.size()) != expected) {
    throw LoadError(source, name,
                    "has " + std::to_string(t.size()) + " elements, expected " +
                        std::to_string(expected));
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (!std::isfinite(t[i])) {
      throw LoadError(source, name, "element " + std::to_string(i) + " is not finite");
    }
  }
}
}  // namespace

void Model::validate() const {
  const ModelConfig& c = config;
  c.validate(source);
  const int64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim();
  check_tensor(source, "token_embedding", token_embedding, int64_t(c.vocab_size) * d);
  if (static_cast<int>(layers.size()) != c.n_layers) {
    throw LoadError(source, "layers",
                    std::to_string(layers.size()) + " blocks, config says " +
                        std::to_string(c.n_layers));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    check_tensor(source, p + "attn_norm", w.attn_norm, d);
    check_tensor(source, p + "wq", w.wq, q * d);
    check_tensor(source, p + "wk", w.wk, kv * d);
    check_tensor(source, p + "wv", w.wv, kv * d);
    check_tensor(source, p + "wo", w.wo, d * q);
    check_tensor(source, p + "ffn_norm", w.ffn_norm, d);
    check_tensor(source, p + "w1", w.w1, h * d);
    check_tensor(source, p + "w2", w.w2, d * h);
    check_tensor(source, p + "w3", w.w3, h * d);
    if (c.attention_bias) {
      check_tensor(source, p + "bq", w.bq, q);
      check_tensor(source, p + "bk", w.bk, kv);
      check_tensor(source, p + "bv", w.bv, kv);
    } else if (!w.bq.empty() || !w.bk.empty() || !w.bv.empty()) {
      throw LoadError(source, p + "bq", "biases must be empty when attention_bias is false");
    }
  }
  check_tensor(source, "final_norm", final_norm, d);
  if (c.tied_classifier) {
    if (!classifier.empty()) {
      throw LoadError(source, "classifier", "must be empty when the classifier is tied");
    }
  } else {
    check_tensor(source, "classifier", classifier, int64_t(c.vocab_size) * d);
  }
}

}  // namespace nanoserve
