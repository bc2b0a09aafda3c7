#include "common/engine/model/tensor_parallel.h"

#include <string>

#include "common/error.h"

namespace nanoserve::engine {

namespace {

// Rows [begin, begin + n) of a row-major (rows, cols) matrix.
std::vector<float> rows_of(const std::vector<float>& m, int cols, int begin, int n) {
  return std::vector<float>(m.begin() + std::ptrdiff_t(begin) * cols,
                            m.begin() + std::ptrdiff_t(begin + n) * cols);
}

// Columns [begin, begin + n) of a row-major (rows, cols) matrix.
std::vector<float> cols_of(const std::vector<float>& m, int rows, int cols, int begin, int n) {
  std::vector<float> out;
  out.reserve(std::size_t(rows) * n);
  for (int r = 0; r < rows; ++r) {
    const auto row = m.begin() + std::ptrdiff_t(r) * cols + begin;
    out.insert(out.end(), row, row + n);
  }
  return out;
}

}  // namespace

TensorParallelShard TensorParallelShard::of(const ModelConfig& c, int rank, int size) {
  const std::string who = "tensor parallelism " + std::to_string(size) + ": ";
  if (size < 1 || rank < 0 || rank >= size) {
    throw InvalidArgument(who + "rank " + std::to_string(rank) + " is not in [0, " +
                          std::to_string(size) + ")");
  }
  if (c.n_heads % size != 0) {
    throw InvalidArgument(who + "n_heads = " + std::to_string(c.n_heads) +
                          " is not a multiple of the tensor-parallel degree");
  }
  if (c.hidden_dim % size != 0) {
    throw InvalidArgument(who + "hidden_dim = " + std::to_string(c.hidden_dim) +
                          " is not a multiple of the tensor-parallel degree");
  }
  if (c.n_kv_heads % size != 0 && size % c.n_kv_heads != 0) {
    throw InvalidArgument(who + "n_kv_heads = " + std::to_string(c.n_kv_heads) +
                          " neither divides nor is a multiple of the tensor-parallel degree");
  }
  TensorParallelShard s;
  s.rank = rank;
  s.size = size;
  s.q_heads = c.n_heads / size;
  s.q_head_begin = rank * s.q_heads;
  s.kv_replicated = c.n_kv_heads < size;
  s.kv_heads = s.kv_replicated ? 1 : c.n_kv_heads / size;
  s.kv_head_begin = s.kv_replicated ? s.q_head_begin / c.gqa_group() : rank * s.kv_heads;
  s.hidden = c.hidden_dim / size;
  s.hidden_begin = rank * s.hidden;
  s.vocab_stride = (c.vocab_size + size - 1) / size;
  s.vocab_begin = std::min(rank * s.vocab_stride, c.vocab_size);
  s.vocab = std::min(s.vocab_stride, c.vocab_size - s.vocab_begin);
  if (s.vocab < 1) {
    throw InvalidArgument(who + "vocab_size = " + std::to_string(c.vocab_size) +
                          " leaves rank " + std::to_string(rank) + " no vocabulary rows");
  }
  return s;
}

Model shard_model(const Model& m, const TensorParallelShard& s) {
  const ModelConfig& c = m.config;
  const TensorParallelShard check = TensorParallelShard::of(c, s.rank, s.size);
  if (check.q_heads != s.q_heads || check.vocab != s.vocab || check.hidden != s.hidden) {
    throw InvalidArgument("shard_model: the shard was made for another model");
  }
  const int d = c.dim, hd = c.head_dim;
  Model out;
  out.config = c;
  out.config.name = c.name + " [tp " + std::to_string(s.rank) + "/" + std::to_string(s.size) + "]";
  out.config.n_heads = s.q_heads;
  out.config.n_kv_heads = s.kv_heads;
  out.config.hidden_dim = s.hidden;
  out.config.vocab_size = s.vocab + 1;  // + the zero row of tokens outside the slice
  out.source = m.source;
  // Embedding and classifier: the slice's rows, then one zero row. A tied classifier stays
  // tied: its slice is the embedding's slice, zero row included (a logit of 0, never read).
  out.token_embedding = rows_of(m.token_embedding, d, s.vocab_begin, s.vocab);
  out.token_embedding.resize(out.token_embedding.size() + std::size_t(d), 0.0f);
  if (!c.tied_classifier) {
    out.classifier = rows_of(m.classifier, d, s.vocab_begin, s.vocab);
    out.classifier.resize(out.classifier.size() + std::size_t(d), 0.0f);
  }
  out.final_norm = m.final_norm;
  const int q0 = s.q_head_begin * hd, nq = s.q_heads * hd;
  const int k0 = s.kv_head_begin * hd, nk = s.kv_heads * hd;
  for (const LayerWeights& l : m.layers) {
    LayerWeights w;
    w.attn_norm = l.attn_norm;
    w.ffn_norm = l.ffn_norm;
    w.wq = rows_of(l.wq, d, q0, nq);
    w.wk = rows_of(l.wk, d, k0, nk);
    w.wv = rows_of(l.wv, d, k0, nk);
    w.wo = cols_of(l.wo, d, c.q_dim(), q0, nq);
    w.w1 = rows_of(l.w1, d, s.hidden_begin, s.hidden);
    w.w3 = rows_of(l.w3, d, s.hidden_begin, s.hidden);
    w.w2 = cols_of(l.w2, d, c.hidden_dim, s.hidden_begin, s.hidden);
    if (c.attention_bias) {
      w.bq = std::vector<float>(l.bq.begin() + q0, l.bq.begin() + q0 + nq);
      w.bk = std::vector<float>(l.bk.begin() + k0, l.bk.begin() + k0 + nk);
      w.bv = std::vector<float>(l.bv.begin() + k0, l.bv.begin() + k0 + nk);
    }
    out.layers.push_back(std::move(w));
  }
  out.validate();
  return out;
}

}  // namespace nanoserve::engine
