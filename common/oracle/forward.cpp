#include "common/oracle/forward.h"

#include <string>

#include "common/error.h"
#include "common/rope_frequencies.h"
#include "common/oracle/attention.h"
#include "common/oracle/ops.h"
#include "common/oracle/rope.h"

namespace nanoserve::oracle {

const char* to_string(LinearInput which) {
  switch (which) {
    case LinearInput::kAttention: return "attention";
    case LinearInput::kAttentionOut: return "attention_out";
    case LinearInput::kFfn: return "ffn";
    case LinearInput::kFfnHidden: return "ffn_hidden";
    case LinearInput::kClassifier: return "classifier";
  }
  return "unknown";
}

namespace {

/// The activations of one pass over T rows (llama2.c's `RunState`, one row per token).
struct Activations {
  Activations(const ModelConfig& c, int T)
      : x(size_t(T) * c.dim), xn(size_t(T) * c.dim), q(size_t(T) * c.q_dim()),
        att(size_t(T) * c.q_dim()), proj(size_t(T) * c.dim), gate(size_t(T) * c.hidden_dim),
        up(size_t(T) * c.hidden_dim) {}
  std::vector<float> x;     // (T, dim) residual stream
  std::vector<float> xn;    // (T, dim) normalized residual, input of a block's first linears
  std::vector<float> q;     // (T, q_dim) queries
  std::vector<float> att;   // (T, q_dim) attention output
  std::vector<float> proj;  // (T, dim) output of wo or w2, added to the residual
  std::vector<float> gate;  // (T, hidden_dim) w1 x, then swiglu(w1 x, w3 x)
  std::vector<float> up;    // (T, hidden_dim) w3 x
};

void check_arguments(const Model& model, const KVStore& kv, const std::vector<int>& tokens,
                     int start_pos) {
  const ModelConfig& c = model.config;
  if (tokens.empty()) throw InvalidArgument("oracle::forward: no tokens");
  if (int(model.layers.size()) != c.n_layers || kv.n_layers() != c.n_layers ||
      kv.kv_dim() != c.kv_dim()) {
    throw InvalidArgument("oracle::forward: KVStore (" + std::to_string(kv.n_layers()) +
                          " layers, kv_dim " + std::to_string(kv.kv_dim()) +
                          ") does not fit model '" + c.name + "'");
  }
  if (start_pos < 0 || start_pos > kv.length()) {
    throw InvalidArgument("oracle::forward: start_pos " + std::to_string(start_pos) +
                          " is outside [0, cached length " + std::to_string(kv.length()) + "]");
  }
  if (int64_t(start_pos) + int64_t(tokens.size()) > kv.capacity()) {
    throw InvalidArgument("oracle::forward: positions " + std::to_string(start_pos) + ".." +
                          std::to_string(start_pos + int64_t(tokens.size()) - 1) +
                          " exceed the KV capacity " + std::to_string(kv.capacity()));
  }
}

/// y[r, j] += b[j] for every row r of a (rows, cols) matrix.
void add_bias(float* y, const float* b, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < cols; ++j) y[int64_t(r) * cols + j] += b[j];
  }
}

}  // namespace

std::vector<float> forward_prompt(const Model& model, KVStore& kv,
                                  const std::vector<int>& tokens, int start_pos,
                                  const ForwardHooks* hooks) {
  check_arguments(model, kv, tokens, start_pos);
  const ModelConfig& c = model.config;
  const int T = int(tokens.size());
  const int n_keys = start_pos + T;  // keys 0 .. n_keys-1 exist once this pass wrote its own
  const int kv_dim = c.kv_dim();
  const AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  auto linear_input = [&](int layer, LinearInput which, const std::vector<float>& x, int cols) {
    if (hooks && hooks->on_linear_input) hooks->on_linear_input(layer, which, x.data(), T, cols);
  };

  const std::vector<float> inv_freq = rope_frequencies(c);  // (head_dim / 2)
  std::vector<int> positions(T);  // (T)
  for (int t = 0; t < T; ++t) positions[t] = start_pos + t;
  Activations a(c, T);
  embedding(model.token_embedding.data(), c.vocab_size, c.dim, tokens.data(), T, a.x.data());
  // Forget any tail past the rows we are about to write (a rollback, or a fresh pass).
  kv.set_length(start_pos);

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = model.layers[l];
    float* k_rows = kv.k(l) + int64_t(start_pos) * kv_dim;  // (T, kv_dim) inside the cache
    float* v_rows = kv.v(l) + int64_t(start_pos) * kv_dim;  // (T, kv_dim) inside the cache

    // Attention: QKV projections straight into the query buffer and the cache rows.
    rmsnorm(a.x.data(), w.attn_norm.data(), T, c.dim, c.norm_eps, a.xn.data());
    linear_input(l, LinearInput::kAttention, a.xn, c.dim);
    matmul(a.xn.data(), w.wq.data(), T, c.dim, c.q_dim(), a.q.data());
    matmul(a.xn.data(), w.wk.data(), T, c.dim, kv_dim, k_rows);
    matmul(a.xn.data(), w.wv.data(), T, c.dim, kv_dim, v_rows);
    if (c.attention_bias) {  // Qwen2: q, k and v carry a bias, added before RoPE
      add_bias(a.q.data(), w.bq.data(), T, c.q_dim());
      add_bias(k_rows, w.bk.data(), T, kv_dim);
      add_bias(v_rows, w.bv.data(), T, kv_dim);
    }
    rope(a.q.data(), positions.data(), T, c.n_heads, c.head_dim, inv_freq.data(), c.rope_style);
    rope(k_rows, positions.data(), T, c.n_kv_heads, c.head_dim, inv_freq.data(), c.rope_style);
    attention(a.q.data(), positions.data(), T, kv.k(l), kv.v(l), n_keys, shape, a.att.data());
    linear_input(l, LinearInput::kAttentionOut, a.att, c.q_dim());
    matmul(a.att.data(), w.wo.data(), T, c.q_dim(), c.dim, a.proj.data());
    residual_add(a.x.data(), a.proj.data(), T * c.dim);

    // Feed-forward: SwiGLU.
    rmsnorm(a.x.data(), w.ffn_norm.data(), T, c.dim, c.norm_eps, a.xn.data());
    linear_input(l, LinearInput::kFfn, a.xn, c.dim);
    matmul(a.xn.data(), w.w1.data(), T, c.dim, c.hidden_dim, a.gate.data());
    matmul(a.xn.data(), w.w3.data(), T, c.dim, c.hidden_dim, a.up.data());
    swiglu(a.gate.data(), a.up.data(), T * c.hidden_dim, a.gate.data());
    linear_input(l, LinearInput::kFfnHidden, a.gate, c.hidden_dim);
    matmul(a.gate.data(), w.w2.data(), T, c.hidden_dim, c.dim, a.proj.data());
    residual_add(a.x.data(), a.proj.data(), T * c.dim);

    if (hooks && hooks->on_block_output) hooks->on_block_output(l, a.x.data(), T, c.dim);
  }
  kv.set_length(n_keys);

  rmsnorm(a.x.data(), model.final_norm.data(), T, c.dim, c.norm_eps, a.xn.data());
  linear_input(c.n_layers, LinearInput::kClassifier, a.xn, c.dim);
  std::vector<float> logits(size_t(T) * c.vocab_size);  // (T, vocab_size)
  matmul(a.xn.data(), model.classifier_weights().data(), T, c.dim, c.vocab_size, logits.data());
  return logits;
}

std::vector<float> forward_prompt(const Model& model, const std::vector<int>& tokens,
                                  const ForwardHooks* hooks) {
  if (tokens.empty()) throw InvalidArgument("oracle::forward: no tokens");
  if (tokens.size() > size_t(model.config.max_seq_len)) {
    throw InvalidArgument("oracle::forward: " + std::to_string(tokens.size()) +
                          " tokens exceed max_seq_len " +
                          std::to_string(model.config.max_seq_len));
  }
  KVStore kv(model.config, int(tokens.size()));
  return forward_prompt(model, kv, tokens, 0, hooks);
}

std::vector<float> forward_token(const Model& model, KVStore& kv, int token, int pos,
                                 const ForwardHooks* hooks) {
  return forward_prompt(model, kv, std::vector<int>{token}, pos, hooks);
}

}  // namespace nanoserve::oracle
