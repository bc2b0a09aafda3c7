#pragma once
/// \file
/// \brief `KVRegionTable`: the host-side bookkeeping of a contiguous ("naive") KV cache — which
/// request holds which region and how many of its positions are filled — and the
/// reserved-versus-used accounting chapter 1 reports. No device memory: `NaiveKVCache` owns
/// one and keeps it in step with the keys and values it really stores, and a what-if
/// calculation (a workload replayed without running the model) can drive one directly.
///
///     region:      0                 1                 2                 3
///               [██████░░░░░░░░░] [██░░░░░░░░░░░░░] [free           ] [█████████████░░]
///                len 6 of 15       len 2 of 15                         len 13 of 15
///     reserved = 3 regions × 15 positions × bytes_per_token      (allocated regions, in full)
///     used     = (6 + 2 + 13) positions × bytes_per_token     (filled positions)

#include <cstdint>
#include <vector>

namespace nanoserve::engine {

/// \brief Regions of `max_seq_len` positions, each reserved whole by one request.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp KVRegionTable
class KVRegionTable {
 public:
  /// \brief `num_regions` free regions of `max_seq_len` positions of `bytes_per_token` bytes
  /// (K and V together). Throws `InvalidArgument` for values < 1.
  KVRegionTable(int num_regions, int max_seq_len, std::int64_t bytes_per_token);

  /// \brief True when a region is free.
  bool can_allocate() const;
  /// \brief Reserves the lowest free region at length 0 and returns it. Throws
  /// `InvalidArgument` when every region is taken.
  int allocate();
  /// \brief Frees `region`. Throws `InvalidArgument` if it is not allocated.
  void free(int region);
  /// \brief True when `region` is an allocated region.
  bool is_allocated(int region) const;
  /// \brief Filled positions of `region`. Throws `InvalidArgument` if it is not allocated.
  int length(int region) const;
  /// \brief Checks that positions `start_pos .. start_pos + num_tokens - 1` may be written to
  /// `region`: allocated, `start_pos <= length` (no gap), and the end within `max_seq_len`.
  /// Throws `InvalidArgument` naming the region and positions otherwise.
  void check_write(int region, int start_pos, int num_tokens) const;
  /// \brief Records that `region` now holds positions `0 .. start_pos + num_tokens - 1` (an
  /// earlier `start_pos` drops the old tail), after `check_write`.
  void write(int region, int start_pos, int num_tokens);
  /// \brief Drops positions `length ..` of `region`. Throws `InvalidArgument` unless
  /// `0 <= length <= this->length(region)`.
  void truncate(int region, int length);

  /// \brief Number of regions.
  int num_regions() const { return static_cast<int>(lengths_.size()); }
  /// \brief Positions per region.
  int max_seq_len() const { return max_seq_len_; }
  /// \brief Bytes of one position (K and V, all layers).
  std::int64_t bytes_per_token() const { return bytes_per_token_; }
  /// \brief Regions currently allocated.
  int num_allocated() const;
  /// \brief `num_regions × max_seq_len × bytes_per_token`: what the cache holds on the device.
  std::int64_t capacity_bytes() const;
  /// \brief `num_allocated × max_seq_len × bytes_per_token`.
  std::int64_t reserved_bytes() const;
  /// \brief `Σ length × bytes_per_token` over allocated regions.
  std::int64_t used_bytes() const;
  /// \brief `used_bytes / reserved_bytes`, 0 when nothing is reserved.
  double utilization() const;

 private:
  int max_seq_len_;
  std::int64_t bytes_per_token_;
  std::vector<int> lengths_;  // (num_regions) filled positions; -1 = free
};

}  // namespace nanoserve::engine
