#include "common/engine/model/paged_kv_cache.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/engine/kv/kv_memory.h"
#include "common/error.h"
#include "kernels/block_copy.h"
#include "kernels/paged_attention.h"

namespace nanoserve::engine {

namespace {

// Longest run of queries per sequence the decode kernel takes (speculative verification is
// γ + 1 ≈ 2..9); longer equal-length chunks are prefills and go to the varlen kernel.
constexpr int kMaxDecodeQueries = 16;

}  // namespace

PagedKVCache::PagedKVCache(const ModelConfig& config, DType dtype, int num_blocks,
                           int block_size, int max_seq_len)
    : n_heads_(config.n_heads),
      layout_{config.n_layers, config.n_kv_heads, config.head_dim, dtype},
      max_seq_len_(checked_cache_context(config, max_seq_len, "PagedKVCache")),
      num_blocks_(num_blocks),
      block_size_(block_size) {
  if (num_blocks < 1 || block_size < 1) {
    throw InvalidArgument("PagedKVCache: need num_blocks >= 1 and block_size >= 1, got " +
                          std::to_string(num_blocks) + " and " + std::to_string(block_size));
  }
  // Slot ids travel to the kernels as int32 (as in vLLM's kernels); refuse pools beyond that.
  if (layer_rows() > std::numeric_limits<int>::max()) {
    throw InvalidArgument("PagedKVCache: " + std::to_string(num_blocks_) + " blocks of " +
                          std::to_string(block_size_) + " tokens exceed int32 slot ids");
  }
  const std::size_t half = static_cast<std::size_t>(pool_bytes() / 2);
  k_ = DeviceBuffer<unsigned char>(half);
  v_ = DeviceBuffer<unsigned char>(half);
}

std::int64_t PagedKVCache::layer_rows() const {
  return std::int64_t(num_blocks_) * block_size_;
}

std::int64_t PagedKVCache::block_bytes() const {
  const std::int64_t kv_dim = std::int64_t(layout_.n_kv_heads) * layout_.head_dim;
  return std::int64_t(block_size_) * kv_dim * dtype_bytes(layout_.dtype);
}

unsigned char* PagedKVCache::block_data(int layer, int block, bool values) {
  check_block(block, "block_data block");
  if (layer < 0 || layer >= layout_.n_layers) {
    throw InvalidArgument("PagedKVCache::block_data: layer " + std::to_string(layer) +
                          " is outside [0, " + std::to_string(layout_.n_layers) + ")");
  }
  unsigned char* pool = values ? v_.get() : k_.get();  // (n_layers, num_blocks, block bytes)
  return pool + (std::int64_t(layer) * num_blocks_ + block) * block_bytes();
}

std::int64_t PagedKVCache::pool_bytes() const {
  const std::int64_t kv_dim = std::int64_t(layout_.n_kv_heads) * layout_.head_dim;
  return 2 * layout_.n_layers * layer_rows() * kv_dim * dtype_bytes(layout_.dtype);
}

void PagedKVCache::zero(cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(k_.get(), 0, k_.bytes(), stream));
  CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, v_.bytes(), stream));
}

void PagedKVCache::begin_forward(const ForwardBatch& batch, StepStaging& staging, int graph_rows) {
  // Check the whole plan before touching any state, so a refused batch changes nothing.
  if (batch.slot_mapping.size() != std::size_t(batch.rows())) {
    throw InvalidArgument("PagedKVCache: the batch has " + std::to_string(batch.rows()) +
                          " rows but " + std::to_string(batch.slot_mapping.size()) +
                          " slots (every row of a paged pass needs one)");
  }
  check_graph_rows(batch, graph_rows, "PagedKVCache");
  for (const BlockCopy& c : batch.block_copies) check_block(c.src, "block copy source");
  for (const BlockCopy& c : batch.block_copies) check_block(c.dst, "block copy destination");
  std::vector<std::int64_t> seen;
  int max_blocks = 1;
  int max_q = 0;
  int row = 0;
  for (const SequenceChunk& c : batch.chunks) {
    const std::string who = "PagedKVCache: sequence " + std::to_string(c.seq);
    if (std::find(seen.begin(), seen.end(), c.seq) != seen.end()) {
      throw InvalidArgument(who + " appears in two chunks of one batch");
    }
    seen.push_back(c.seq);
    const int end = c.start_pos + c.num_tokens;
    if (end > max_seq_len_) {
      throw InvalidArgument(who + ": position " + std::to_string(end - 1) +
                            " is past max_seq_len " + std::to_string(max_seq_len_));
    }
    const int used_blocks = (end + block_size_ - 1) / block_size_;
    if (int(c.block_ids.size()) < used_blocks) {
      throw InvalidArgument(who + ": positions up to " + std::to_string(end - 1) + " need " +
                            std::to_string(used_blocks) + " blocks but its block table has " +
                            std::to_string(c.block_ids.size()));
    }
    for (int b = 0; b < used_blocks; ++b) check_block(c.block_ids[std::size_t(b)], who + "'s block");
    // Each row's slot must be where its block table puts its position (one plan, one truth).
    for (int i = 0; i < c.num_tokens; ++i, ++row) {
      const int p = c.start_pos + i;
      const std::int64_t want =
          std::int64_t(c.block_ids[std::size_t(p / block_size_)]) * block_size_ + p % block_size_;
      if (batch.slot_mapping[std::size_t(row)] != want) {
        throw InvalidArgument(who + ": row " + std::to_string(row) + " (position " +
                              std::to_string(p) + ") has slot " +
                              std::to_string(batch.slot_mapping[std::size_t(row)]) +
                              " but its block table says " + std::to_string(want));
      }
    }
    max_blocks = std::max(max_blocks, used_blocks);
    max_q = std::max(max_q, c.num_tokens);
  }

  staging_ = &staging;
  const bool graph = graph_rows > 0;
  rows_ = graph ? graph_rows : batch.rows();
  batch_ = graph ? graph_rows : static_cast<int>(batch.chunks.size());  // a padding row: a chunk
  // A graph's block tables are as wide as the longest sequence allowed, so that a sequence
  // growing into one more block replays the same graph (the kernels read only up to each
  // sequence's length).
  max_blocks_ = graph ? (max_seq_len_ + block_size_ - 1) / block_size_ : max_blocks;
  max_q_len_ = max_q;
  const bool uniform = std::all_of(batch.chunks.begin(), batch.chunks.end(),
                                   [&](const SequenceChunk& c) { return c.num_tokens == max_q; });
  decode_q_len_ = uniform && max_q <= kMaxDecodeQueries ? max_q : 0;

  // One section: slot mapping (T) | block tables (batch, max_blocks) | context lengths
  // (batch) | cu_seqlens (batch + 1). Padding rows: slot -1 (no write), length 0 (no key).
  const std::size_t n = std::size_t(rows_) + std::size_t(batch_) * max_blocks_ + 2 * batch_ + 1;
  meta_ = staging.add<int>(n);
  int* slots = staging.host<int>(meta_);
  std::fill(slots, slots + n, 0);
  int* tables = slots + rows_;
  int* lens = tables + std::size_t(batch_) * max_blocks_;
  int* cu = lens + batch_;
  for (int r = 0; r < rows_; ++r) {  // slots < layer_rows() <= INT_MAX
    slots[r] = r < batch.rows() ? static_cast<int>(batch.slot_mapping[std::size_t(r)]) : -1;
  }
  for (int b = 0; b < batch_; ++b) {
    const bool real = b < static_cast<int>(batch.chunks.size());
    const int q = real ? batch.chunks[std::size_t(b)].num_tokens : 1;
    cu[b + 1] = cu[b] + q;
    if (!real) continue;
    const SequenceChunk& c = batch.chunks[std::size_t(b)];
    const int end = c.start_pos + c.num_tokens;
    const int used_blocks = (end + block_size_ - 1) / block_size_;
    std::copy(c.block_ids.begin(), c.block_ids.begin() + used_blocks,
              tables + std::size_t(b) * max_blocks_);
    lens[b] = end;
  }
  // The copy-on-write pairs travel in the same upload: (copies, 2) of (src, dst).
  num_copies_ = static_cast<int>(batch.block_copies.size());
  pairs_ = staging.add<int>(2 * std::size_t(num_copies_));
  int* pairs = staging.host<int>(pairs_);
  for (const BlockCopy& c : batch.block_copies) {  // checked above
    *pairs++ = c.src;
    *pairs++ = c.dst;
  }
  if (decode_q_len_ > 0) {
    const std::size_t ws = paged_attention_decode_workspace_floats(
        batch_, decode_q_len_, n_heads_, layout_.head_dim, max_blocks_ * block_size_);
    if (workspace_.size() < ws) workspace_ = DeviceBuffer<float>(ws);  // a graph key changes
  }
}

std::vector<std::int64_t> PagedKVCache::graph_key() const {
  return {graph_key_of(k_.get()),
          graph_key_of(v_.get()),
          graph_key_of(staging_->device<int>(meta_)),
          graph_key_of(workspace_.get()),
          std::int64_t(workspace_.size()),
          rows_,
          batch_,
          max_blocks_,
          max_q_len_,
          decode_q_len_};
}

KVWriteTarget PagedKVCache::write_target(int layer) {
  const std::int64_t kv_dim = std::int64_t(layout_.n_kv_heads) * layout_.head_dim;
  const std::int64_t offset = std::int64_t(layer) * layer_rows() * kv_dim * dtype_bytes(layout_.dtype);
  return {k_.get() + offset, v_.get() + offset, slots(), layer_rows(), layout_.dtype};
}

void PagedKVCache::attend(int layer, const void* q, void* out, DType act, cudaStream_t stream) {
  const AttentionHeads heads{n_heads_, layout_.n_kv_heads, layout_.head_dim};
  const int kv_dim = layout_.n_kv_heads * layout_.head_dim;
  const int* tables = slots() + rows_;
  const int* lens = tables + std::size_t(batch_) * max_blocks_;
  const int* cu = lens + batch_;
  const DeviceBlockTables device_tables{tables, lens, batch_, max_blocks_};
  dispatch_dtype(layout_.dtype, [&](auto tag) {
    using T = decltype(tag);
    const std::int64_t base = std::int64_t(layer) * layer_rows() * kv_dim;
    const PagedKVView<T> pools{reinterpret_cast<const T*>(k_.get()) + base,
                               reinterpret_cast<const T*>(v_.get()) + base, num_blocks_,
                               block_size_};
    dispatch_dtype(act, [&](auto act_tag) {
      using A = decltype(act_tag);
      const A* q_rows = static_cast<const A*>(q);  // (rows, n_heads, head_dim)
      A* out_rows = static_cast<A*>(out);          // (rows, n_heads, head_dim)
      if (decode_q_len_ > 0) {
        launch_paged_attention_decode<T, A>(q_rows, pools, device_tables, decode_q_len_, heads,
                                            out_rows, {workspace_.get(), workspace_.size()},
                                            stream);
      } else {
        launch_paged_attention_prefill<T, A>(q_rows, cu, rows_, max_q_len_, pools, device_tables,
                                             heads, out_rows, stream);
      }
    });
  });
}

void PagedKVCache::check_block(int block, const std::string& what) const {
  if (block < 0 || block >= num_blocks_) {
    throw InvalidArgument("PagedKVCache: " + what + " " + std::to_string(block) +
                          " is outside the pool [0, " + std::to_string(num_blocks_) + ")");
  }
}

void PagedKVCache::before_pass(cudaStream_t stream) {
  if (num_copies_ == 0) return;
  // Enqueued behind the upload that brought the pairs and ahead of the pass that writes into
  // the destinations: stream order is all the synchronization it needs.
  const int kv_dim = layout_.n_kv_heads * layout_.head_dim;
  dispatch_dtype(layout_.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_block_copy<T>(reinterpret_cast<T*>(k_.get()), reinterpret_cast<T*>(v_.get()),
                         layout_.n_layers, num_blocks_, block_size_, kv_dim,
                         staging_->device<int>(pairs_), num_copies_, stream);
  });
}

const int* PagedKVCache::slots() const { return staging_->device<int>(meta_); }

std::vector<float> PagedKVCache::to_host(const std::vector<int>& block_ids, int layer,
                                         int length, bool values) const {
  if (length < 0 || std::int64_t(length) > std::int64_t(block_ids.size()) * block_size_ ||
      layer < 0 || layer >= layout_.n_layers) {
    throw InvalidArgument("PagedKVCache::to_host: layer " + std::to_string(layer) +
                          ", length " + std::to_string(length) + " out of range");
  }
  const int kv_dim = layout_.n_kv_heads * layout_.head_dim;
  const unsigned char* pool = values ? v_.get() : k_.get();
  return dispatch_dtype(layout_.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> row(static_cast<std::size_t>(kv_dim));
    std::vector<float> out;
    out.reserve(std::size_t(length) * kv_dim);
    for (int p = 0; p < length; ++p) {
      const int block = block_ids[std::size_t(p / block_size_)];
      check_block(block, "to_host block");
      const std::int64_t slot = std::int64_t(block) * block_size_ + p % block_size_;
      const std::int64_t r = std::int64_t(layer) * layer_rows() + slot;
      CUDA_CHECK(cudaMemcpy(row.data(), reinterpret_cast<const T*>(pool) + r * kv_dim,
                            row.size() * sizeof(T), cudaMemcpyDeviceToHost));
      for (const T& x : row) out.push_back(to_float(x));
    }
    return out;
  });
}

}  // namespace nanoserve::engine
