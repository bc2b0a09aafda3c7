#include "common/engine/kv/host_block_pool.h"

#include <algorithm>
#include <stdexcept>

#include "common/error.h"

namespace nanoserve::engine {

HostBlockPool::HostBlockPool(int num_blocks) {
  if (num_blocks < 0 || num_blocks > (1 << 24)) {
    throw InvalidArgument("HostBlockPool: num_blocks = " + std::to_string(num_blocks) +
                          " is outside [0, 2^24]");
  }
  ref_cnt_.assign(std::size_t(num_blocks), 0);
  for (int id = num_blocks - 1; id >= 0; --id) free_.push_back(id);  // lowest id on top
}

int HostBlockPool::allocate() {
  if (free_.empty()) throw std::logic_error("HostBlockPool::allocate: no free host block");
  const int id = free_.back();
  free_.pop_back();
  ref_cnt_[std::size_t(id)] = 1;
  return id;
}

void HostBlockPool::touch(int id) {
  if (ref_cnt_.at(std::size_t(id)) < 1) {
    throw std::logic_error("HostBlockPool::touch: host block " + std::to_string(id) + " is free");
  }
  ++ref_cnt_[std::size_t(id)];
}

void HostBlockPool::free(int id) {
  int& r = ref_cnt_.at(std::size_t(id));
  if (r < 1) {
    throw std::logic_error("HostBlockPool::free: host block " + std::to_string(id) +
                           " is already free");
  }
  if (--r == 0) {
    // Keep the lowest free id on top, so ids are handed out in a predictable order.
    free_.insert(std::upper_bound(free_.begin(), free_.end(), id, std::greater<int>()), id);
  }
}

std::string HostBlockPool::check_invariants() const {
  int zero = 0;
  for (std::size_t id = 0; id < ref_cnt_.size(); ++id) {
    if (ref_cnt_[id] < 0) return "host block " + std::to_string(id) + " has a negative ref_cnt";
    zero += ref_cnt_[id] == 0;
  }
  if (zero != num_free_blocks()) {
    return "host pool: " + std::to_string(zero) + " blocks without a holder but " +
           std::to_string(num_free_blocks()) + " on the free list";
  }
  for (int id : free_) {
    if (ref_cnt_[std::size_t(id)] != 0) return "host block " + std::to_string(id) + " is free but held";
  }
  return {};
}

}  // namespace nanoserve::engine
