#include "common/engine/model/model_runner.h"

#include <cstring>
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

// y = x Wᵀ (+ bias on every row when the layer has one): the bias row (`width` values in A,
// or an empty buffer) is first copied into each of the T rows of y (doubling copies: 1, 2, 4, …
// rows), then the linear accumulates onto it.
template <typename A>
void apply_biased(const DeviceLinear& w, const DeviceBuffer<std::byte>* bias, const A* x, A* y,
                  int T, cudaStream_t stream) {
  constexpr DType kAct = dtype_of<A>();
  if (bias == nullptr || bias->size() == 0 || T == 0) {
    w.apply(x, kAct, y, kAct, T, stream, Epilogue::kStore);
    return;
  }
  const std::size_t row_bytes = bias->bytes();
  const std::size_t width = row_bytes / sizeof(A);
  CUDA_CHECK(cudaMemcpyAsync(y, bias->get(), row_bytes, cudaMemcpyDeviceToDevice, stream));
  for (int have = 1; have < T;) {
    const int n = have < T - have ? have : T - have;
    CUDA_CHECK(cudaMemcpyAsync(y + std::size_t(have) * width, y, row_bytes * std::size_t(n),
                               cudaMemcpyDeviceToDevice, stream));
    have += n;
  }
  w.apply(x, kAct, y, kAct, T, stream, Epilogue::kAccumulate);
}

template <typename T>
DeviceBuffer<T> rows_of(int rows, int width) {
  return DeviceBuffer<T>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(width));
}

// (rows, width) elements of `dtype` as bytes.
DeviceBuffer<std::byte> act_rows(int rows, int width, DType dtype) {
  return DeviceBuffer<std::byte>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(width) *
                                 static_cast<std::size_t>(dtype_bytes(dtype)));
}

// An fp32 device bias rounded to `dtype` (once, when the runner is made). An fp32 bias is
// copied as it is; a rounded one is added to each sum after one more rounding than the
// oracle's fp32 bias add (covered by the forward tolerances).
DeviceBuffer<std::byte> bias_in(const DeviceTensor& bias, DType dtype) {
  if (bias.numel() == 0) return DeviceBuffer<std::byte>();
  std::vector<float> host(bias.numel());
  CUDA_CHECK(cudaMemcpy(host.data(), bias.data<float>(), host.size() * sizeof(float),
                        cudaMemcpyDeviceToHost));
  return dispatch_dtype(dtype, [&](auto tag) {
    using A = decltype(tag);
    std::vector<std::byte> bytes(host.size() * sizeof(A));
    for (std::size_t i = 0; i < host.size(); ++i) {
      const A v = from_float<A>(host[i]);
      std::memcpy(bytes.data() + i * sizeof(A), &v, sizeof(A));
    }
    return DeviceBuffer<std::byte>(bytes);
  });
}
}  // namespace

ModelRunner::ModelRunner(const DeviceModel& model, RunnerOptions options, cudaStream_t stream)
    : model_(model),
      options_(options),
      stream_(stream),
      act_(options.activation_dtype.value_or(model.dtype())) {
  if (options.max_tokens_per_step < 1 || options.max_logit_rows < 1) {
    throw InvalidArgument("ModelRunner: max_tokens_per_step = " +
                          std::to_string(options.max_tokens_per_step) + " and max_logit_rows = " +
                          std::to_string(options.max_logit_rows) + " must both be >= 1");
  }
  const ModelConfig& c = model.config();
  const int t = options.max_tokens_per_step;
  tokens_ = rows_of<int>(t, 1);
  positions_ = rows_of<int>(t, 1);
  x_ = act_rows(t, c.dim, act_);
  xn_ = act_rows(t, c.dim, act_);
  q_ = act_rows(t, c.q_dim(), act_);
  k_ = act_rows(t, c.kv_dim(), act_);
  v_ = act_rows(t, c.kv_dim(), act_);
  att_ = act_rows(t, c.q_dim(), act_);
  gate_ = act_rows(t, c.hidden_dim, act_);
  up_ = act_rows(t, c.hidden_dim, act_);
  logits_ = rows_of<float>(options.max_logit_rows, c.vocab_size);
  inv_freq_ = rope_frequencies(c);
  if (c.attention_bias) {
    for (int l = 0; l < c.n_layers; ++l) {
      const DeviceLayer& w = model.layer(l);
      for (const DeviceTensor* b : {&w.bq, &w.bk, &w.bv}) biases_.push_back(bias_in(*b, act_));
    }
  }
}

std::int64_t ModelRunner::activation_bytes() const {
  std::int64_t total = 0;
  for (const DeviceBuffer<std::byte>* b : {&x_, &xn_, &q_, &k_, &v_, &att_, &gate_, &up_}) {
    total += static_cast<std::int64_t>(b->bytes());
  }
  return total + static_cast<std::int64_t>(logits_.bytes() + tokens_.bytes() + positions_.bytes());
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
  forward_on_device(batch, attention);
  const std::size_t n =
      batch.logit_rows.size() * static_cast<std::size_t>(model_.config().vocab_size);
  std::vector<float> logits(n);
  if (n > 0) {
    CUDA_CHECK(cudaMemcpy(logits.data(), logits_.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return logits;
}

void ModelRunner::forward_on_device(const ForwardBatch& batch, DeviceKVCache& attention) {
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

  dispatch_dtype(act_, [&](auto act_tag) {
    dispatch_dtype(model_.dtype(), [&](auto weight_tag) {
      using A = decltype(act_tag);
      using W = decltype(weight_tag);
      run_layers<A, W>(T, attention);
      final_logits<A, W>(batch);
    });
  });
}

template <typename A, typename W>
void ModelRunner::run_layers(int T, DeviceKVCache& attention) {
  const ModelConfig& c = model_.config();
  constexpr DType kAct = dtype_of<A>();
  A* x = as<A>(x_);
  A* xn = as<A>(xn_);
  A* q = as<A>(q_);
  A* k = as<A>(k_);
  A* v = as<A>(v_);
  A* att = as<A>(att_);
  A* gate = as<A>(gate_);
  A* up = as<A>(up_);
  const auto bias = [&](int l, int i) -> const DeviceBuffer<std::byte>* {
    return biases_.empty() ? nullptr : &biases_[std::size_t(3 * l + i)];
  };
  // x = embedding[tokens]: ids were checked on the host, so no device flag is needed.
  launch_embedding<W, A>(model_.token_embedding().data<W>(), c.vocab_size, c.dim, tokens_.get(),
                         T, x, nullptr, stream_);
  for (int l = 0; l < c.n_layers; ++l) {
    const DeviceLayer& w = model_.layer(l);
    // Attention block.
    launch_rmsnorm<W, A>(x, w.attn_norm.data<W>(), T, c.dim, c.norm_eps, xn, stream_);
    apply_biased(*w.wq, bias(l, 0), xn, q, T, stream_);
    apply_biased(*w.wk, bias(l, 1), xn, k, T, stream_);
    apply_biased(*w.wv, bias(l, 2), xn, v, T, stream_);
    launch_rope<A>(q, k, positions_.get(), T, c.n_heads, c.n_kv_heads, c.head_dim,
                   inv_freq_.data(), pairing_of(c.rope_style), stream_);
    attention.append_kv(l, k, v, kAct, stream_);
    attention.attend(l, q, att, kAct, stream_);
    w.wo->apply(att, kAct, x, kAct, T, stream_, Epilogue::kAccumulate);  // x += a Woᵀ
    // Feed-forward block (SwiGLU).
    launch_rmsnorm<W, A>(x, w.ffn_norm.data<W>(), T, c.dim, c.norm_eps, xn, stream_);
    w.w1->apply(xn, kAct, gate, kAct, T, stream_, Epilogue::kStore);
    w.w3->apply(xn, kAct, up, kAct, T, stream_, Epilogue::kStore);
    launch_swiglu<A>(gate, up, std::int64_t(T) * c.hidden_dim, gate, stream_);
    w.w2->apply(gate, kAct, x, kAct, T, stream_, Epilogue::kAccumulate);  // x += h W2ᵀ
  }
}

// The final norm and the classifier only for the rows that sample a token: in a decode step of
// a long prompt that is one row of T, and the classifier is often the largest matrix. Runs of
// consecutive wanted rows are normalized into consecutive rows of xn, then one linear that
// reads xn in A and writes fp32 logits.
template <typename A, typename W>
void ModelRunner::final_logits(const ForwardBatch& batch) {
  const ModelConfig& c = model_.config();
  const std::vector<int>& rows = batch.logit_rows;
  if (rows.empty()) return;
  A* x = as<A>(x_);
  A* xn = as<A>(xn_);
  std::size_t i = 0;
  while (i < rows.size()) {
    std::size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;  // rows[i..j) are consecutive
    launch_rmsnorm<W, A>(x + std::int64_t(rows[i]) * c.dim, model_.final_norm().data<W>(),
                         static_cast<int>(j - i), c.dim, c.norm_eps, xn + std::int64_t(i) * c.dim,
                         stream_);
    i = j;
  }
  model_.classifier().apply(xn, dtype_of<A>(), logits_.get(), DType::kF32,
                            static_cast<int>(rows.size()), stream_, Epilogue::kStore);
}

}  // namespace nanoserve::engine
