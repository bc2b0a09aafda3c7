#include "common/engine/model/model_runner.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/engine/model/tensor_parallel_group.h"
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

const float* bias_of(const DeviceTensor& b) { return b.numel() == 0 ? nullptr : b.data<float>(); }

// q | k | v of every row (and the biases, which RoPE v02 adds): one QKV projection into `qkv`
// (T, q_dim + 2 kv_dim), read as three strided views — or, for a layer whose three linears could
// not be stacked, three projections into consecutive (T, q_dim), (T, kv_dim), (T, kv_dim)
// arrays of the same buffer.
template <typename A>
QkvRows<A> project_qkv(const DeviceLayer& w, const ModelConfig& c, const A* xn, A* qkv, int T,
                       cudaStream_t stream) {
  constexpr DType kAct = dtype_of<A>();
  const int q_dim = c.q_dim(), kv_dim = c.kv_dim();
  QkvRows<A> rows;
  if (w.wqkv) {
    w.wqkv->apply(xn, kAct, qkv, kAct, T, stream, Epilogue::kStore);
    const int width = q_dim + 2 * kv_dim;
    rows = {qkv, qkv + q_dim, qkv + q_dim + kv_dim, width, width};
  } else {
    A* k = qkv + std::int64_t(T) * q_dim;
    A* v = k + std::int64_t(T) * kv_dim;
    w.wq->apply(xn, kAct, qkv, kAct, T, stream, Epilogue::kStore);
    w.wk->apply(xn, kAct, k, kAct, T, stream, Epilogue::kStore);
    w.wv->apply(xn, kAct, v, kAct, T, stream, Epilogue::kStore);
    rows = {qkv, k, v, q_dim, kv_dim};
  }
  rows.q_bias = bias_of(w.bq);
  rows.k_bias = bias_of(w.bk);
  rows.v_bias = bias_of(w.bv);
  return rows;
}

// h = silu(xn W1ᵀ) ⊙ xn W3ᵀ: one linear over [W1; W3] with the SwiGLU epilogue, or — unstacked
// w1, w3 — two linears and swiglu v01 (`up` then holds xn W3ᵀ).
template <typename A>
void gated_mlp(const DeviceLayer& w, int hidden, const A* xn, A* h, A* up, int T,
               cudaStream_t stream) {
  constexpr DType kAct = dtype_of<A>();
  if (w.w13) {
    w.w13->apply(xn, kAct, h, kAct, T, stream, Epilogue::kSwiGLU);
    return;
  }
  w.w1->apply(xn, kAct, h, kAct, T, stream, Epilogue::kStore);
  w.w3->apply(xn, kAct, up, kAct, T, stream, Epilogue::kStore);
  launch_swiglu<A>(h, up, std::int64_t(T) * hidden, h, stream);
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

// The stream a runner owns when it is given none (0): a blocking stream, so work a caller puts
// on the legacy default stream is still ordered with the runner's.
cudaStream_t new_stream() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreate(&s));
  return s;
}

RunnerOptions checked(const DeviceModel& model, RunnerOptions o) {
  if (o.max_tokens_per_step < 1 || o.max_logit_rows < 1) {
    throw InvalidArgument("ModelRunner: max_tokens_per_step = " +
                          std::to_string(o.max_tokens_per_step) + " and max_logit_rows = " +
                          std::to_string(o.max_logit_rows) + " must both be >= 1");
  }
  if (const TensorParallelGroup* tp = o.tensor_parallel) {
    const ModelConfig& c = model.config();
    const TensorParallelShard& s = tp->shard();
    if (c.n_heads != s.q_heads || c.n_kv_heads != s.kv_heads || c.hidden_dim != s.hidden ||
        c.vocab_size != s.vocab + 1) {
      throw InvalidArgument("ModelRunner: model '" + c.name + "' is not the shard of rank " +
                            std::to_string(s.rank) + " of " + std::to_string(s.size) +
                            " (shard_model makes it)");
    }
    o.cuda_graphs = false;  // MPI's collectives cannot be captured in a graph
  }
  return o;
}
}  // namespace

// A graph's pass computes logits for all its rows, so its rows may not exceed max_logit_rows.
std::vector<int> graph_buckets(const RunnerOptions& o) {
  if (!o.cuda_graphs) return {};
  return cuda_graph_buckets(std::min(o.max_tokens_per_step, o.max_logit_rows));
}

ModelRunner::ModelRunner(const DeviceModel& model, RunnerOptions options, cudaStream_t stream)
    : model_(model),
      options_(checked(model, options)),
      own_stream_(stream == nullptr ? new_stream() : nullptr),
      stream_(stream == nullptr ? own_stream_.get() : stream),
      act_(options.activation_dtype.value_or(model.dtype())),
      graphs_(engine::graph_buckets(options_)) {
  const ModelConfig& c = model.config();
  const int t = options.max_tokens_per_step;
  x_ = act_rows(t, c.dim, act_);
  xn_ = act_rows(t, c.dim, act_);
  qkv_ = act_rows(t, c.q_dim() + 2 * c.kv_dim(), act_);
  q_ = act_rows(t, c.q_dim(), act_);
  att_ = act_rows(t, c.q_dim(), act_);
  h_ = act_rows(t, c.hidden_dim, act_);
  for (int l = 0; l < c.n_layers; ++l) {
    if (!model.layer(l).w13 && up_.size() == 0) up_ = act_rows(t, c.hidden_dim, act_);
  }
  logits_ = rows_of<float>(options.max_logit_rows, vocab_size());
  if (const TensorParallelGroup* tp = options_.tensor_parallel) {
    shard_logits_ = rows_of<float>(options.max_logit_rows, c.vocab_size);
    gathered_logits_ = rows_of<float>(tp->size() * options.max_logit_rows, tp->gather_width());
  }
  inv_freq_ = rope_frequencies(c);
}

int ModelRunner::vocab_size() const {
  return options_.tensor_parallel != nullptr ? options_.tensor_parallel->vocab_size()
                                             : model_.config().vocab_size;
}

std::int64_t ModelRunner::activation_bytes() const {
  std::int64_t total = 0;
  for (const DeviceBuffer<std::byte>* b : {&x_, &xn_, &qkv_, &q_, &att_, &h_, &up_}) {
    total += static_cast<std::int64_t>(b->bytes());
  }
  return total + static_cast<std::int64_t>(logits_.bytes() + shard_logits_.bytes() +
                                            gathered_logits_.bytes());
}

StepCounters ModelRunner::counters() const {
  StepCounters c = counters_;
  c.graph_replays = graphs_.counters().replays;
  c.graph_captures = graphs_.counters().captures;
  c.graph_updates = graphs_.counters().updates;
  c.uploads = staging_.uploads();
  return c;
}

int ModelRunner::graph_rows(const ForwardBatch& batch) const {
  if (graphs_.buckets().empty() || !batch.one_row_per_chunk()) return 0;
  // Every row samples (rows 0 .. T-1 ascending), so the graph's logits for all rows serve.
  const int T = batch.rows();
  if (static_cast<int>(batch.logit_rows.size()) != T || batch.logit_rows.back() != T - 1) return 0;
  return graph_bucket(graphs_.buckets(), T);
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
  const std::size_t n = batch.logit_rows.size() * static_cast<std::size_t>(vocab_size());
  std::vector<float> logits(n);
  if (n > 0) {
    CUDA_CHECK(cudaMemcpyAsync(logits.data(), logits_.get(), n * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  return logits;
}

void ModelRunner::forward_on_device(const ForwardBatch& batch, DeviceKVCache& attention,
                                    const std::function<void(StepStaging&)>& stage_more) {
  TensorParallelGroup* tp = options_.tensor_parallel;
  batch.validate(vocab_size());
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
  // A decode pass that fits a bucket replays its graph over `rows` >= T rows; the rows past T
  // are padding (token 0 at position 0; the cache gives them no slot and no keys).
  const int graph_rows = this->graph_rows(batch);
  const int rows = graph_rows > 0 ? graph_rows : T;

  // Stage the step: the cache's metadata (it may refuse the batch; nothing has run yet), token
  // ids and positions, whatever the caller adds — then one upload.
  staging_.begin();
  attention.begin_forward(batch, staging_, graph_rows);
  tokens_at_ = staging_.add<int>(std::size_t(rows));
  positions_at_ = staging_.add<int>(std::size_t(rows));
  int* tokens = staging_.host<int>(tokens_at_);
  int* positions = staging_.host<int>(positions_at_);
  if (tp != nullptr) {  // each rank's embedding holds a slice: ids of the slice, or its zero row
    for (int i = 0; i < T; ++i) tokens[i] = tp->shard().local_token(batch.tokens[std::size_t(i)]);
  } else {
    std::copy(batch.tokens.begin(), batch.tokens.end(), tokens);
  }
  std::fill(tokens + T, tokens + rows, 0);
  int r = 0;
  for (const SequenceChunk& chunk : batch.chunks) {
    for (int i = 0; i < chunk.num_tokens; ++i) positions[r++] = chunk.start_pos + i;
  }
  std::fill(positions + T, positions + rows, 0);
  if (stage_more) stage_more(staging_);
  // Every check passed: the other ranks of a tensor-parallel group run the same pass.
  if (tp != nullptr && tp->rank() == 0) tp->send_plan(batch);
  staging_.upload(stream_);
  attention.before_pass(stream_);

  ++counters_.passes;
  if (graph_rows == 0) {
    ++counters_.eager_passes;
    launch_pass(T, batch.logit_rows, attention);
    return;
  }
  counters_.padding_rows += graph_rows - T;
  std::vector<int> all_rows(static_cast<std::size_t>(graph_rows));
  std::iota(all_rows.begin(), all_rows.end(), 0);
  // What the captured launches take from the host: the cache's addresses and sizes, and where
  // the token ids and positions were staged (the same offsets every step of a bucket, unless
  // the staging grew).
  std::vector<std::int64_t> key = attention.graph_key();
  key.push_back(graph_key_of(&attention));
  key.push_back(graph_key_of(staging_.device<int>(tokens_at_)));
  key.push_back(graph_key_of(staging_.device<int>(positions_at_)));
  graphs_.run(graph_rows, key, stream_, [&] { launch_pass(graph_rows, all_rows, attention); });
}

void ModelRunner::launch_pass(int T, const std::vector<int>& logit_rows, DeviceKVCache& attention) {
  dispatch_dtype(act_, [&](auto act_tag) {
    dispatch_dtype(model_.dtype(), [&](auto weight_tag) {
      using A = decltype(act_tag);
      using W = decltype(weight_tag);
      run_layers<A, W>(T, attention);
      final_logits<A, W>(logit_rows);
    });
  });
  // Under tensor parallelism, wait for the pass with the communicator's watchdog: a peer that
  // died or hangs is an error here, not a hang later.
  if (options_.tensor_parallel != nullptr) options_.tensor_parallel->comm().synchronize(stream_);
}

template <typename A>
void ModelRunner::all_reduce_residual(A* x, int T) {
  if (TensorParallelGroup* tp = options_.tensor_parallel) {
    tp->all_reduce(x, std::int64_t(T) * model_.config().dim, dtype_of<A>(), stream_);
  }
}

template <typename A, typename W>
void ModelRunner::run_layers(int T, DeviceKVCache& attention) {
  const ModelConfig& c = model_.config();
  constexpr DType kAct = dtype_of<A>();
  A* x = as<A>(x_);
  A* xn = as<A>(xn_);
  A* qkv = as<A>(qkv_);
  A* q = as<A>(q_);
  A* att = as<A>(att_);
  A* h = as<A>(h_);
  A* up = as<A>(up_);
  // x = embedding[tokens]: ids were checked on the host, so no device flag is needed.
  const int* tokens = staging_.device<int>(tokens_at_);        // (T)
  const int* positions = staging_.device<int>(positions_at_);  // (T)
  launch_embedding<W, A>(model_.token_embedding().data<W>(), c.vocab_size, c.dim, tokens, T, x,
                         nullptr, stream_);
  all_reduce_residual(x, T);  // tensor parallelism: one rank's row + zeros from the others
  // A row-parallel linear's epilogue: x += … (or, on ranks > 0 of a group, x = its part).
  const Epilogue residual = options_.tensor_parallel != nullptr
                                ? options_.tensor_parallel->row_parallel_epilogue()
                                : Epilogue::kAccumulate;
  for (int l = 0; l < c.n_layers; ++l) {
    const DeviceLayer& w = model_.layer(l);
    // Attention block.
    launch_rmsnorm<W, A>(x, w.attn_norm.data<W>(), T, c.dim, c.norm_eps, xn, stream_);
    const QkvRows<A> rows = project_qkv(w, c, xn, qkv, T, stream_);  // q | k | v (+ biases)
    // q = rope(q); the cache's slots ← rope(k), v — one launch (RoPE v02).
    const KVWriteTarget kv = attention.write_target(l);
    dispatch_dtype(kv.dtype, [&](auto kv_tag) {
      using K = decltype(kv_tag);
      launch_rope_kv_append<K, A>(rows, positions, T, c.n_heads, c.n_kv_heads, c.head_dim,
                                  inv_freq_.data(), pairing_of(c.rope_style), q,
                                  {static_cast<K*>(kv.k), static_cast<K*>(kv.v), kv.slots,
                                   kv.num_slots},
                                  stream_);
    });
    attention.attend(l, q, att, kAct, stream_);
    w.wo->apply(att, kAct, x, kAct, T, stream_, residual);  // x += a Woᵀ
    all_reduce_residual(x, T);
    // Feed-forward block (SwiGLU).
    launch_rmsnorm<W, A>(x, w.ffn_norm.data<W>(), T, c.dim, c.norm_eps, xn, stream_);
    gated_mlp(w, c.hidden_dim, xn, h, up, T, stream_);                // h = silu(xn W1ᵀ) ⊙ xn W3ᵀ
    w.w2->apply(h, kAct, x, kAct, T, stream_, residual);  // x += h W2ᵀ
    all_reduce_residual(x, T);
  }
}

// The final norm and the classifier only for the rows that sample a token: in a decode step of
// a long prompt that is one row of T, and the classifier is often the largest matrix. Runs of
// consecutive wanted rows are normalized into consecutive rows of xn, then one linear that
// reads xn in A and writes fp32 logits.
template <typename A, typename W>
void ModelRunner::final_logits(const std::vector<int>& rows) {
  const ModelConfig& c = model_.config();
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
  const int n = static_cast<int>(rows.size());
  TensorParallelGroup* tp = options_.tensor_parallel;
  float* out = tp != nullptr ? shard_logits_.get() : logits_.get();
  model_.classifier().apply(xn, dtype_of<A>(), out, DType::kF32, n, stream_, Epilogue::kStore);
  if (tp != nullptr) tp->gather_logits(out, gathered_logits_.get(), n, logits_.get(), stream_);
}

}  // namespace nanoserve::engine
