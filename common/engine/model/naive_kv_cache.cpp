#include "common/engine/model/naive_kv_cache.h"

#include <algorithm>
#include <string>

#include "common/engine/kv/kv_memory.h"
#include "common/error.h"
#include "kernels/attention.h"

namespace nanoserve::engine {

NaiveKVCache::NaiveKVCache(const ModelConfig& config, DType dtype, int max_seq_len, int num_regions)
    : n_heads_(config.n_heads),
      layout_{config.n_layers, config.n_kv_heads, config.head_dim, dtype},
      regions_(num_regions, checked_cache_context(config, max_seq_len, "NaiveKVCache"),
             config.kv_bytes_per_token(dtype_bytes(dtype))) {
  // K and V are each half of a position's bytes.
  const std::size_t half = static_cast<std::size_t>(regions_.capacity_bytes() / 2);
  k_ = DeviceBuffer<unsigned char>(half);
  v_ = DeviceBuffer<unsigned char>(half);
  const std::size_t ws = attention_decode_workspace_floats(1, config.n_heads, config.head_dim,
                                                           regions_.max_seq_len());
  if (ws > 0) workspace_ = DeviceBuffer<float>(ws);
}

std::int64_t NaiveKVCache::region_row(int region, int layer) const {
  return (std::int64_t(region) * layout_.n_layers + layer) * regions_.max_seq_len();
}

void NaiveKVCache::begin_forward(const ForwardBatch& batch, StepStaging& staging, int graph_rows) {
  // Check every chunk before recording any, so a refused batch leaves the cache as it was.
  if (!batch.block_copies.empty() || !batch.slot_mapping.empty()) {
    throw InvalidArgument("NaiveKVCache: the batch carries paged KV (slots or block copies); "
                          "a naive cache places rows by region and position");
  }
  check_graph_rows(batch, graph_rows, "NaiveKVCache");
  std::vector<std::int64_t> seen;
  for (const SequenceChunk& c : batch.chunks) {
    if (c.seq < 0 || c.seq >= regions_.num_regions()) {
      throw InvalidArgument("NaiveKVCache: region " + std::to_string(c.seq) + " is outside [0, " +
                            std::to_string(regions_.num_regions()) + ")");
    }
    regions_.check_write(static_cast<int>(c.seq), c.start_pos, c.num_tokens);
    if (std::find(seen.begin(), seen.end(), c.seq) != seen.end()) {
      throw InvalidArgument("NaiveKVCache: region " + std::to_string(c.seq) +
                            " appears in two chunks of one batch");
    }
    seen.push_back(c.seq);
  }
  host_mapping_.clear();
  host_lens_.clear();
  for (const SequenceChunk& c : batch.chunks) {
    // BEGIN EXERCISE ch01.1 "Place each new token's K/V row in the contiguous cache" points=10 minutes=20
    // HINT: A region holds max_seq_len rows per layer, layer after layer. The i-th new token
    // HINT: of chunk c sits at position c.start_pos + i of region c.seq; push the cache row of
    // HINT: layer 0 (write_target shifts it to the other layers). Use region_row().
    // STUB: for (int i = 0; i < c.num_tokens; ++i) host_mapping_.push_back(-1);  // -1: not written
    for (int i = 0; i < c.num_tokens; ++i) {
      host_mapping_.push_back(static_cast<int>(region_row(static_cast<int>(c.seq), 0) + c.start_pos + i));
    }
    // END EXERCISE
    host_lens_.push_back(c.start_pos + c.num_tokens);
    regions_.write(static_cast<int>(c.seq), c.start_pos, c.num_tokens);
  }
  // Padding rows of a graph's pass: slot -1, which the KV write skips (no attention runs
  // for them: attend() goes chunk by chunk).
  rows_ = graph_rows > 0 ? graph_rows : batch.rows();
  host_mapping_.resize(std::size_t(rows_), -1);
  // One section: slot mapping (rows) | attention lengths (chunks).
  staging_ = &staging;
  meta_ = staging.add<int>(host_mapping_.size() + host_lens_.size());
  int* meta = staging.host<int>(meta_);
  std::copy(host_mapping_.begin(), host_mapping_.end(), meta);
  std::copy(host_lens_.begin(), host_lens_.end(), meta + host_mapping_.size());
  chunks_ = batch.chunks;
}

std::vector<std::int64_t> NaiveKVCache::graph_key() const {
  std::vector<std::int64_t> key = {graph_key_of(k_.get()), graph_key_of(v_.get()),
                                   graph_key_of(staging_->device<int>(meta_)),
                                   graph_key_of(workspace_.get()), rows_};
  for (const SequenceChunk& c : chunks_) key.push_back(c.seq);  // attend() takes its region's base
  return key;
}

KVWriteTarget NaiveKVCache::write_target(int layer) {
  const std::int64_t kv_dim = std::int64_t(layout_.n_kv_heads) * layout_.head_dim;
  // The mapping counts rows from layer 0 of region 0; shift the base to layer `layer` instead.
  const std::int64_t base_row = region_row(0, layer);
  const std::int64_t rows_after_base =
      std::int64_t(regions_.num_regions()) * layout_.n_layers * regions_.max_seq_len() - base_row;
  const std::int64_t offset = base_row * kv_dim * dtype_bytes(layout_.dtype);  // bytes
  return {k_.get() + offset, v_.get() + offset, staging_->device<int>(meta_), rows_after_base,
          layout_.dtype};
}

void NaiveKVCache::attend(int layer, const void* q, void* out, DType act, cudaStream_t stream) {
  const AttentionHeads heads{n_heads_, layout_.n_kv_heads, layout_.head_dim};
  const int kv_dim = layout_.n_kv_heads * layout_.head_dim;
  const int q_dim = n_heads_ * layout_.head_dim;
  const int max_len = regions_.max_seq_len();
  const int* lens = staging_->device<int>(meta_) + rows_;  // (chunks) after the slot mapping
  dispatch_dtype(layout_.dtype, [&](auto tag) {
    dispatch_dtype(act, [&](auto act_tag) {
      using T = decltype(tag);
      using A = decltype(act_tag);
      int row = 0;
      for (std::size_t i = 0; i < chunks_.size(); ++i) {
        const SequenceChunk& c = chunks_[i];
        const std::int64_t offset = region_row(static_cast<int>(c.seq), layer) * kv_dim;
        const T* k_cache = reinterpret_cast<const T*>(k_.get()) + offset;  // (max_len, kv_dim)
        const T* v_cache = reinterpret_cast<const T*>(v_.get()) + offset;  // (max_len, kv_dim)
        const A* q_rows = static_cast<const A*>(q) + std::int64_t(row) * q_dim;  // (T, q_dim)
        A* out_rows = static_cast<A*>(out) + std::int64_t(row) * q_dim;        // (T, q_dim)
        if (c.num_tokens == 1) {
          // Decode: one query over the whole cached prefix; long prefixes split over blocks.
          launch_attention_decode<T, A>(q_rows, k_cache, v_cache, lens + i, 1, max_len,
                                        heads, out_rows, {workspace_.get(), workspace_.size()},
                                        stream);
        } else {
          launch_attention_prefill<T, A>(q_rows, k_cache, v_cache, c.num_tokens, c.start_pos,
                                         max_len, heads, out_rows, stream);
        }
        row += c.num_tokens;
      }
    });
  });
}

std::vector<float> NaiveKVCache::to_host(int region, int layer, bool values) const {
  const int kv_dim = layout_.n_kv_heads * layout_.head_dim;
  const std::size_t n = static_cast<std::size_t>(regions_.length(region)) * kv_dim;
  const unsigned char* base = values ? v_.get() : k_.get();
  return dispatch_dtype(layout_.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> raw(n);
    if (n > 0) {
      CUDA_CHECK(cudaMemcpy(raw.data(),
                            reinterpret_cast<const T*>(base) + region_row(region, layer) * kv_dim,
                            n * sizeof(T), cudaMemcpyDeviceToHost));
    }
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = to_float(raw[i]);
    return out;
  });
}

}  // namespace nanoserve::engine
