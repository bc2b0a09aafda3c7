#include "common/engine/kv/free_block_queue.h"

#include <stdexcept>
#include <string>

namespace nanoserve::engine {

FreeBlockQueue::FreeBlockQueue(const std::vector<KVCacheBlock*>& blocks)
    : head_(std::make_unique<KVCacheBlock>()), tail_(std::make_unique<KVCacheBlock>()) {
  head_->next_free = tail_.get();
  tail_->prev_free = head_.get();
  for (KVCacheBlock* block : blocks) append(block);
}

KVCacheBlock* FreeBlockQueue::popleft() {
  if (size_ == 0) throw std::logic_error("FreeBlockQueue::popleft: the queue is empty");
  KVCacheBlock* block = head_->next_free;
  remove(block);
  return block;
}

void FreeBlockQueue::append(KVCacheBlock* block) {
  if (is_linked(*block)) {
    throw std::logic_error("FreeBlockQueue::append: block " + std::to_string(block->block_id) +
                           " is already in the free queue (double free)");
  }
  KVCacheBlock* last = tail_->prev_free;
  last->next_free = block;
  block->prev_free = last;
  block->next_free = tail_.get();
  tail_->prev_free = block;
  ++size_;
}

void FreeBlockQueue::remove(KVCacheBlock* block) {
  if (!is_linked(*block)) {
    throw std::logic_error("FreeBlockQueue::remove: block " + std::to_string(block->block_id) +
                           " is not in the free queue");
  }
  block->prev_free->next_free = block->next_free;
  block->next_free->prev_free = block->prev_free;
  block->prev_free = nullptr;
  block->next_free = nullptr;
  --size_;
}

std::vector<int> FreeBlockQueue::block_ids() const {
  std::vector<int> ids;
  ids.reserve(static_cast<size_t>(size_));
  for (const KVCacheBlock* b = head_->next_free; b != tail_.get() && b != nullptr;
       b = b->next_free) {
    ids.push_back(b->block_id);
    if (static_cast<int>(ids.size()) > size_) break;  // a cycle; check_links() names it
  }
  return ids;
}

std::string FreeBlockQueue::check_links() const {
  int forward = 0;
  for (const KVCacheBlock* b = head_.get(); b != tail_.get(); b = b->next_free) {
    const KVCacheBlock* next = b->next_free;
    if (next == nullptr) {
      return "free queue: block " + std::to_string(b->block_id) + " has no next link";
    }
    if (next->prev_free != b) {
      return "free queue: block " + std::to_string(next->block_id) +
             ".prev_free does not point back to block " + std::to_string(b->block_id);
    }
    if (next != tail_.get() && ++forward > size_) {
      return "free queue: more than size() = " + std::to_string(size_) +
             " blocks reachable from the head (a cycle?)";
    }
  }
  if (forward != size_) {
    return "free queue: " + std::to_string(forward) + " blocks linked but size() is " +
           std::to_string(size_);
  }
  return "";
}

}  // namespace nanoserve::engine
