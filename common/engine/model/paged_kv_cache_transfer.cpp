// PagedKVCache: packing blocks for another instance and unpacking them (chapter 9's hand-off of
// a prompt's KV from a prefill instance to a decode instance).
//
// The pools are layer-major, so one block's K (or V) is n_layers runs of block_size * kv_dim
// elements, one per layer. A packed block puts them together:
//
//     pool K (n_layers, num_blocks, block_size, kv_dim)      packed (blocks, 2, n_layers, ...)
//     layer 0: [b0][b1][b2]...                               block 7: K l0 | K l1 | … | V l0 | …
//     layer 1: [b0][b1][b2]...                 ──pack──►     block 3: K l0 | K l1 | … | V l0 | …
//
// so that a hand-off is one contiguous buffer whatever the block table, and the receiver can
// place block i wherever its own table says. One cudaMemcpyAsync per (block, layer, K|V): device
// to device copies the GPU's copy engines run back to back.
#include "common/engine/model/paged_kv_cache.h"

#include <string>

namespace nanoserve::engine {

std::size_t PagedKVCache::packed_block_bytes() const {
  const std::size_t kv_dim = std::size_t(layout_.n_kv_heads) * layout_.head_dim;
  return 2 * std::size_t(layout_.n_layers) * std::size_t(block_size_) * kv_dim *
         dtype_bytes(layout_.dtype);
}

namespace {

// Byte offset of (layer, block) in a pool, and the bytes of one block of one layer.
struct BlockGeometry {
  std::size_t run;        // block_size * kv_dim * dtype bytes
  std::size_t layer_stride;  // num_blocks * run
};

}  // namespace

void PagedKVCache::pack_blocks(const std::vector<int>& block_ids, void* dst,
                               cudaStream_t stream) const {
  for (int b : block_ids) check_block(b, "pack_blocks block");
  const std::size_t run = packed_block_bytes() / (2 * std::size_t(layout_.n_layers));
  const BlockGeometry g{run, std::size_t(num_blocks_) * run};
  unsigned char* out = static_cast<unsigned char*>(dst);
  for (int b : block_ids) {
    for (int kv = 0; kv < 2; ++kv) {
      const unsigned char* pool = kv == 0 ? k_.get() : v_.get();
      for (int l = 0; l < layout_.n_layers; ++l, out += g.run) {
        CUDA_CHECK(cudaMemcpyAsync(out, pool + l * g.layer_stride + std::size_t(b) * g.run,
                                   g.run, cudaMemcpyDeviceToDevice, stream));
      }
    }
  }
}

void PagedKVCache::unpack_blocks(const std::vector<int>& block_ids, const void* src,
                                 cudaStream_t stream) {
  for (int b : block_ids) check_block(b, "unpack_blocks block");
  const std::size_t run = packed_block_bytes() / (2 * std::size_t(layout_.n_layers));
  const BlockGeometry g{run, std::size_t(num_blocks_) * run};
  const unsigned char* in = static_cast<const unsigned char*>(src);
  for (int b : block_ids) {
    for (int kv = 0; kv < 2; ++kv) {
      unsigned char* pool = kv == 0 ? k_.get() : v_.get();
      for (int l = 0; l < layout_.n_layers; ++l, in += g.run) {
        CUDA_CHECK(cudaMemcpyAsync(pool + l * g.layer_stride + std::size_t(b) * g.run, in,
                                   g.run, cudaMemcpyDeviceToDevice, stream));
      }
    }
  }
}

}  // namespace nanoserve::engine
