#include "common/engine/kv/block_table.h"

#include <string>

#include "common/error.h"

namespace nanoserve::engine {

int64_t BlockTable::slot(int pos) const {
  if (pos < 0 || pos >= num_tokens_) {
    throw InvalidArgument("BlockTable::slot: position " + std::to_string(pos) +
                          " is outside [0, " + std::to_string(num_tokens_) + ")");
  }
  return int64_t{block_ids_[static_cast<size_t>(pos / block_size_)]} * block_size_ +
         pos % block_size_;
}

std::vector<int64_t> BlockTable::slot_mapping(int begin, int end) const {
  if (begin < 0 || begin > end || end > num_tokens_) {
    throw InvalidArgument("BlockTable::slot_mapping: range [" + std::to_string(begin) + ", " +
                          std::to_string(end) + ") is not inside [0, " +
                          std::to_string(num_tokens_) + "]");
  }
  std::vector<int64_t> slots;
  slots.reserve(static_cast<size_t>(end - begin));
  for (int pos = begin; pos < end; ++pos) slots.push_back(slot(pos));
  return slots;
}

}  // namespace nanoserve::engine
