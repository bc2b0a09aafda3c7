#include "common/engine/model/host_kv_pool.h"

#include <string>

#include "common/error.h"

namespace nanoserve::engine {

void HostKVPool::PinnedFree::operator()(unsigned char* p) const {
  if (p != nullptr) cudaFreeHost(p);  // never throws from a destructor
}

HostKVPool::HostKVPool(const PagedKVCache& cache, int num_blocks)
    : n_layers_(cache.layout().n_layers), num_blocks_(num_blocks), block_bytes_(cache.block_bytes()) {
  if (num_blocks < 1) {
    throw InvalidArgument("HostKVPool: num_blocks = " + std::to_string(num_blocks) + " must be >= 1");
  }
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, static_cast<std::size_t>(bytes())));
  data_.reset(static_cast<unsigned char*>(p));
}

std::int64_t HostKVPool::bytes() const {
  return std::int64_t(n_layers_) * 2 * num_blocks_ * block_bytes_;
}

unsigned char* HostKVPool::host_block(int layer, bool values, int block) const {
  return data_.get() + ((std::int64_t(layer) * 2 + (values ? 1 : 0)) * num_blocks_ + block) * block_bytes_;
}

void HostKVPool::check(const PagedKVCache& cache, const std::vector<BlockSwap>& pairs) const {
  for (const BlockSwap& p : pairs) {
    if (p.host < 0 || p.host >= num_blocks_ || p.device < 0 || p.device >= cache.num_blocks()) {
      throw InvalidArgument("HostKVPool: swap of device block " + std::to_string(p.device) +
                            " and host block " + std::to_string(p.host) + " is outside the pools (" +
                            std::to_string(cache.num_blocks()) + " device, " +
                            std::to_string(num_blocks_) + " host blocks)");
    }
  }
}

void HostKVPool::copy(PagedKVCache& cache, const std::vector<BlockSwap>& pairs, bool to_host,
                      cudaStream_t stream) {
  check(cache, pairs);
  const auto bytes = static_cast<std::size_t>(block_bytes_);
  for (const BlockSwap& p : pairs) {
    for (int layer = 0; layer < n_layers_; ++layer) {
      for (bool values : {false, true}) {
        unsigned char* device = cache.block_data(layer, p.device, values);
        unsigned char* host = host_block(layer, values, p.host);
        CUDA_CHECK(cudaMemcpyAsync(to_host ? host : device, to_host ? device : host, bytes,
                                   to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                                   stream));
      }
    }
  }
}

void HostKVPool::swap_out(PagedKVCache& cache, const std::vector<BlockSwap>& pairs,
                          cudaStream_t stream) {
  copy(cache, pairs, /*to_host=*/true, stream);
}

void HostKVPool::swap_in(PagedKVCache& cache, const std::vector<BlockSwap>& pairs,
                         cudaStream_t stream) {
  copy(cache, pairs, /*to_host=*/false, stream);
}

}  // namespace nanoserve::engine
