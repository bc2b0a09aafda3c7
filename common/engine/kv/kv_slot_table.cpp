#include "common/engine/kv/kv_slot_table.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace nanoserve::engine {

namespace {
std::string slot_name(int slot) { return "slot " + std::to_string(slot); }
}  // namespace

KVSlotTable::KVSlotTable(int num_slots, int max_seq_len, std::int64_t bytes_per_token)
    : max_seq_len_(max_seq_len), bytes_per_token_(bytes_per_token) {
  if (num_slots < 1 || max_seq_len < 1 || bytes_per_token < 1) {
    throw InvalidArgument("KVSlotTable: num_slots = " + std::to_string(num_slots) +
                          ", max_seq_len = " + std::to_string(max_seq_len) +
                          " and bytes_per_token = " + std::to_string(bytes_per_token) +
                          " must all be >= 1");
  }
  lengths_.assign(static_cast<std::size_t>(num_slots), -1);
}

bool KVSlotTable::can_allocate() const {
  return std::find(lengths_.begin(), lengths_.end(), -1) != lengths_.end();
}

int KVSlotTable::allocate() {
  const auto it = std::find(lengths_.begin(), lengths_.end(), -1);
  if (it == lengths_.end()) {
    throw InvalidArgument("KV cache: all " + std::to_string(num_slots()) +
                          " slots are reserved (each holds " + std::to_string(max_seq_len_) +
                          " positions); free one before starting another request");
  }
  *it = 0;
  return static_cast<int>(it - lengths_.begin());
}

bool KVSlotTable::is_allocated(int slot) const {
  return slot >= 0 && slot < num_slots() && lengths_[static_cast<std::size_t>(slot)] >= 0;
}

void KVSlotTable::free(int slot) {
  if (!is_allocated(slot)) {
    throw InvalidArgument("KV cache: cannot free " + slot_name(slot) +
                          ": it is not allocated (the cache has " + std::to_string(num_slots()) +
                          " slots)");
  }
  lengths_[static_cast<std::size_t>(slot)] = -1;
}

int KVSlotTable::length(int slot) const {
  if (!is_allocated(slot)) {
    throw InvalidArgument("KV cache: " + slot_name(slot) + " is not an allocated slot (the cache has " +
                          std::to_string(num_slots()) + ")");
  }
  return lengths_[static_cast<std::size_t>(slot)];
}

void KVSlotTable::check_write(int slot, int start_pos, int num_tokens) const {
  const int len = length(slot);
  if (start_pos < 0 || start_pos > len) {
    throw InvalidArgument("KV cache: " + slot_name(slot) + " holds " + std::to_string(len) +
                          " positions, so a write cannot start at position " +
                          std::to_string(start_pos) + " (positions must follow without a gap)");
  }
  if (num_tokens < 1 || std::int64_t(start_pos) + num_tokens > max_seq_len_) {
    throw InvalidArgument("KV cache: positions " + std::to_string(start_pos) + ".." +
                          std::to_string(std::int64_t(start_pos) + num_tokens - 1) + " of " +
                          slot_name(slot) + " exceed its " + std::to_string(max_seq_len_) +
                          " reserved positions (max_seq_len)");
  }
}

void KVSlotTable::write(int slot, int start_pos, int num_tokens) {
  check_write(slot, start_pos, num_tokens);
  lengths_[static_cast<std::size_t>(slot)] = start_pos + num_tokens;
}

void KVSlotTable::truncate(int slot, int new_length) {
  const int len = length(slot);
  if (new_length < 0 || new_length > len) {
    throw InvalidArgument("KV cache: cannot truncate " + slot_name(slot) + " to " +
                          std::to_string(new_length) + " positions; it holds " +
                          std::to_string(len));
  }
  lengths_[static_cast<std::size_t>(slot)] = new_length;
}

int KVSlotTable::num_allocated() const {
  return static_cast<int>(
      std::count_if(lengths_.begin(), lengths_.end(), [](int len) { return len >= 0; }));
}

std::int64_t KVSlotTable::capacity_bytes() const {
  return std::int64_t(num_slots()) * max_seq_len_ * bytes_per_token_;
}

std::int64_t KVSlotTable::reserved_bytes() const {
  return std::int64_t(num_allocated()) * max_seq_len_ * bytes_per_token_;
}

std::int64_t KVSlotTable::used_bytes() const {
  std::int64_t positions = 0;
  for (int len : lengths_) positions += std::max(len, 0);
  return positions * bytes_per_token_;
}

double KVSlotTable::utilization() const {
  const std::int64_t reserved = reserved_bytes();
  return reserved == 0 ? 0.0 : double(used_bytes()) / double(reserved);
}

}  // namespace nanoserve::engine
