#include "common/engine/model/model_runner.h"

#include <string>

#include "common/error.h"
#include "common/rope_frequencies.h"
#include "kernels/embedding.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace nanoserve::engine {

namespace {
RopePairing pairing_of(RopeStyle style) {
  return style == RopeStyle::kRotateHalf ? RopePairing::kRotateHalf : RopePairing::kAdjacentPairs;
}

// y = x Wᵀ (+ bias on every row when the layer has one): the bias is first copied into each of
// the T rows of y (doubling copies: 1, 2, 4, … rows), then the linear accumulates onto it.
void apply_biased(const DeviceLinear& w, const DeviceTensor& bias, const float* x, float* y,
                  int T, cudaStream_t stream) {
  if (bias.numel() == 0 || T == 0) {
    w.apply(x, y, T, stream, Epilogue::kStore);
    return;
  }
  const std::size_t row_bytes = bias.numel() * sizeof(float);
  CUDA_CHECK(cudaMemcpyAsync(y, bias.data<float>(), row_bytes, cudaMemcpyDeviceToDevice, stream));
  for (int have = 1; have < T;) {
    const int n = have < T - have ? have : T - have;
    CUDA_CHECK(cudaMemcpyAsync(y + std::size_t(have) * bias.numel(), y, row_bytes * std::size_t(n),
                               cudaMemcpyDeviceToDevice, stream));
    have += n;
  }
  w.apply(x, y, T, stream, Epilogue::kAccumulate);
}

template <typename T>
DeviceBuffer<T> rows_of(int rows, int width) {
  return DeviceBuffer<T>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(width));
}
}  // namespace

ModelRunner::ModelRunner(const DeviceModel& model, RunnerOptions options, cudaStream_t stream)
    : model_(model), options_(options), stream_(stream) {
  if (options.max_tokens_per_step < 1 || options.max_logit_rows < 1) {
    throw InvalidArgument("ModelRunner: max_tokens_per_step = " +
                          std::to_string(options.max_tokens_per_step) + " and max_logit_rows = " +
                          std::to_string(options.max_logit_rows) + " must both be >= 1");
  }
  const ModelConfig& c = model.config();
  const int t = options.max_tokens_per_step;
  tokens_ = rows_of<int>(t, 1);
  positions_ = rows_of<int>(t, 1);
  x_ = rows_of<float>(t, c.dim);
  xn_ = rows_of<float>(t, c.dim);
  q_ = rows_of<float>(t, c.q_dim());
  k_ = rows_of<float>(t, c.kv_dim());
  v_ = rows_of<float>(t, c.kv_dim());
  att_ = rows_of<float>(t, c.q_dim());
  gate_ = rows_of<float>(t, c.hidden_dim);
  up_ = rows_of<float>(t, c.hidden_dim);
  logits_ = rows_of<float>(options.max_logit_rows, c.vocab_size);
  inv_freq_ = rope_frequencies(c);
}

std::int64_t ModelRunner::activation_bytes() const {
  std::int64_t total = 0;
  for (const DeviceBuffer<float>* b : {&x_, &xn_, &q_, &k_, &v_, &att_, &gate_, &up_, &logits_}) {
    total += static_cast<std::int64_t>(b->bytes());
  }
  return total + static_cast<std::int64_t>(tokens_.bytes() + positions_.bytes());
}

void ModelRunner::check_layout(const DeviceKVCache& attention) const {
  const ModelConfig& c = model_.config();
  const KVLayout l = attention.layout();
  if (l.n_layers != c.n_layers || l.n_kv_heads != c.n_kv_heads || l.head_dim != c.head_dim) {
    throw InvalidArgument("ModelRunner: the KV cache stores " + std::to_string(l.n_layers) +
                          " layers × " + std::to_string(l.n_kv_heads) + " heads × " +
                          std::to_string(l.head_dim) + " but model '" + c.name + "' has " +
                          std::to_string(c.n_layers) + " × " + std::to_string(c.n_kv_heads) +
                          " × " + std::to_string(c.head_dim));
  }
}

std::vector<float> ModelRunner::forward(const ForwardBatch& batch, DeviceKVCache& attention) {
  const ModelConfig& c = model_.config();
  batch.validate(c.vocab_size);
  check_layout(attention);
  const int T = batch.rows();
  if (T > options_.max_tokens_per_step) {
    throw InvalidArgument("ModelRunner: a batch of " + std::to_string(T) +
                          " tokens exceeds max_tokens_per_step = " +
                          std::to_string(options_.max_tokens_per_step));
  }
  if (static_cast<int>(batch.logit_rows.size()) > options_.max_logit_rows) {
    throw InvalidArgument("ModelRunner: " + std::to_string(batch.logit_rows.size()) +
                          " logit rows exceed max_logit_rows = " +
                          std::to_string(options_.max_logit_rows));
  }
  attention.begin_forward(batch, stream_);  // may refuse the batch; nothing has run yet

  host_positions_ = batch.positions();
  CUDA_CHECK(cudaMemcpyAsync(tokens_.get(), batch.tokens.data(), sizeof(int) * T,
                             cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(positions_.get(), host_positions_.data(), sizeof(int) * T,
                             cudaMemcpyHostToDevice, stream_));

  dispatch_dtype(model_.dtype(), [&](auto tag) {
    using W = decltype(tag);
    // x = embedding[tokens]: ids were checked on the host, so no device flag is needed.
    launch_embedding<W>(model_.token_embedding().data<W>(), c.vocab_size, c.dim, tokens_.get(),
                        T, x_.get(), nullptr, stream_);
    for (int l = 0; l < c.n_layers; ++l) {
      const DeviceLayer& w = model_.layer(l);
      // Attention block.
      launch_rmsnorm<W>(x_.get(), w.attn_norm.data<W>(), T, c.dim, c.norm_eps, xn_.get(), stream_);
      apply_biased(*w.wq, w.bq, xn_.get(), q_.get(), T, stream_);
      apply_biased(*w.wk, w.bk, xn_.get(), k_.get(), T, stream_);
      apply_biased(*w.wv, w.bv, xn_.get(), v_.get(), T, stream_);
      launch_rope(q_.get(), k_.get(), positions_.get(), T, c.n_heads, c.n_kv_heads, c.head_dim,
                  inv_freq_.data(), pairing_of(c.rope_style), stream_);
      attention.append_kv(l, k_.get(), v_.get(), stream_);
      attention.attend(l, q_.get(), att_.get(), stream_);
      w.wo->apply(att_.get(), x_.get(), T, stream_, Epilogue::kAccumulate);  // x += a Woᵀ
      // Feed-forward block (SwiGLU).
      launch_rmsnorm<W>(x_.get(), w.ffn_norm.data<W>(), T, c.dim, c.norm_eps, xn_.get(), stream_);
      w.w1->apply(xn_.get(), gate_.get(), T, stream_, Epilogue::kStore);
      w.w3->apply(xn_.get(), up_.get(), T, stream_, Epilogue::kStore);
      launch_swiglu(gate_.get(), up_.get(), std::int64_t(T) * c.hidden_dim, gate_.get(), stream_);
      w.w2->apply(gate_.get(), x_.get(), T, stream_, Epilogue::kAccumulate);  // x += h W2ᵀ
    }
  });
  final_logits(batch);

  const std::size_t n = batch.logit_rows.size() * static_cast<std::size_t>(c.vocab_size);
  std::vector<float> logits(n);
  if (n > 0) {
    CUDA_CHECK(cudaMemcpy(logits.data(), logits_.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return logits;
}

// The final norm and the classifier only for the rows that sample a token: in a decode step of
// a long prompt that is one row of T, and the classifier is often the largest matrix. Runs of
// consecutive wanted rows are normalized into consecutive rows of xn, then one linear.
void ModelRunner::final_logits(const ForwardBatch& batch) {
  const ModelConfig& c = model_.config();
  const std::vector<int>& rows = batch.logit_rows;
  if (rows.empty()) return;
  dispatch_dtype(model_.dtype(), [&](auto tag) {
    using W = decltype(tag);
    std::size_t i = 0;
    while (i < rows.size()) {
      std::size_t j = i + 1;
      while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;  // rows[i..j) are consecutive
      launch_rmsnorm<W>(x_.get() + std::int64_t(rows[i]) * c.dim, model_.final_norm().data<W>(),
                        static_cast<int>(j - i), c.dim, c.norm_eps,
                        xn_.get() + std::int64_t(i) * c.dim, stream_);
      i = j;
    }
  });
  model_.classifier().apply(xn_.get(), logits_.get(), static_cast<int>(rows.size()), stream_,
                            Epilogue::kStore);
}

}  // namespace nanoserve::engine
