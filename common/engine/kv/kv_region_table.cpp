#include "common/engine/kv/kv_region_table.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace nanoserve::engine {

namespace {
std::string slot_name(int region) { return "region " + std::to_string(region); }
}  // namespace

KVRegionTable::KVRegionTable(int num_regions, int max_seq_len, std::int64_t bytes_per_token)
    : max_seq_len_(max_seq_len), bytes_per_token_(bytes_per_token) {
  if (num_regions < 1 || max_seq_len < 1 || bytes_per_token < 1) {
    throw InvalidArgument("KVRegionTable: num_regions = " + std::to_string(num_regions) +
                          ", max_seq_len = " + std::to_string(max_seq_len) +
                          " and bytes_per_token = " + std::to_string(bytes_per_token) +
                          " must all be >= 1");
  }
  lengths_.assign(static_cast<std::size_t>(num_regions), -1);
}

bool KVRegionTable::can_allocate() const {
  return std::find(lengths_.begin(), lengths_.end(), -1) != lengths_.end();
}

int KVRegionTable::allocate() {
  const auto it = std::find(lengths_.begin(), lengths_.end(), -1);
  if (it == lengths_.end()) {
    throw InvalidArgument("KV cache: all " + std::to_string(num_regions()) +
                          " regions are reserved (each holds " + std::to_string(max_seq_len_) +
                          " positions); free one before starting another request");
  }
  *it = 0;
  return static_cast<int>(it - lengths_.begin());
}

bool KVRegionTable::is_allocated(int region) const {
  return region >= 0 && region < num_regions() && lengths_[static_cast<std::size_t>(region)] >= 0;
}

void KVRegionTable::free(int region) {
  if (!is_allocated(region)) {
    throw InvalidArgument("KV cache: cannot free " + slot_name(region) +
                          ": it is not allocated (the cache has " + std::to_string(num_regions()) +
                          " regions)");
  }
  lengths_[static_cast<std::size_t>(region)] = -1;
}

int KVRegionTable::length(int region) const {
  if (!is_allocated(region)) {
    throw InvalidArgument("KV cache: " + slot_name(region) + " is not an allocated region (the cache has " +
                          std::to_string(num_regions()) + ")");
  }
  return lengths_[static_cast<std::size_t>(region)];
}

void KVRegionTable::check_write(int region, int start_pos, int num_tokens) const {
  const int len = length(region);
  if (start_pos < 0 || start_pos > len) {
    throw InvalidArgument("KV cache: " + slot_name(region) + " holds " + std::to_string(len) +
                          " positions, so a write cannot start at position " +
                          std::to_string(start_pos) + " (positions must follow without a gap)");
  }
  if (num_tokens < 1 || std::int64_t(start_pos) + num_tokens > max_seq_len_) {
    throw InvalidArgument("KV cache: positions " + std::to_string(start_pos) + ".." +
                          std::to_string(std::int64_t(start_pos) + num_tokens - 1) + " of " +
                          slot_name(region) + " exceed its " + std::to_string(max_seq_len_) +
                          " reserved positions (max_seq_len)");
  }
}

void KVRegionTable::write(int region, int start_pos, int num_tokens) {
  check_write(region, start_pos, num_tokens);
  lengths_[static_cast<std::size_t>(region)] = start_pos + num_tokens;
}

void KVRegionTable::truncate(int region, int new_length) {
  const int len = length(region);
  if (new_length < 0 || new_length > len) {
    throw InvalidArgument("KV cache: cannot truncate " + slot_name(region) + " to " +
                          std::to_string(new_length) + " positions; it holds " +
                          std::to_string(len));
  }
  lengths_[static_cast<std::size_t>(region)] = new_length;
}

int KVRegionTable::num_allocated() const {
  return static_cast<int>(
      std::count_if(lengths_.begin(), lengths_.end(), [](int len) { return len >= 0; }));
}

std::int64_t KVRegionTable::capacity_bytes() const {
  return std::int64_t(num_regions()) * max_seq_len_ * bytes_per_token_;
}

std::int64_t KVRegionTable::reserved_bytes() const {
  return std::int64_t(num_allocated()) * max_seq_len_ * bytes_per_token_;
}

std::int64_t KVRegionTable::used_bytes() const {
  std::int64_t positions = 0;
  for (int len : lengths_) positions += std::max(len, 0);
  return positions * bytes_per_token_;
}

double KVRegionTable::utilization() const {
  const std::int64_t reserved = reserved_bytes();
  return reserved == 0 ? 0.0 : double(used_bytes()) / double(reserved);
}

}  // namespace nanoserve::engine
