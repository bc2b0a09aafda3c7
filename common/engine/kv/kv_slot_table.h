#pragma once
/// \file
/// \brief `KVSlotTable`: the host-side bookkeeping of a contiguous ("naive") KV cache — which
/// request holds which slot and how many of its positions are filled — and the
/// reserved-versus-used accounting chapter 1 reports. No device memory: `NaiveKVCache` owns
/// one and keeps it in step with the keys and values it really stores, and a what-if
/// calculation (a workload replayed without running the model) can drive one directly.
///
///     slot:      0                 1                 2                 3
///               [██████░░░░░░░░░] [██░░░░░░░░░░░░░] [free           ] [█████████████░░]
///                len 6 of 15       len 2 of 15                         len 13 of 15
///     reserved = 3 slots × 15 positions × bytes_per_token      (allocated slots, in full)
///     used     = (6 + 2 + 13) positions × bytes_per_token     (filled positions)

#include <cstdint>
#include <vector>

namespace nanoserve::engine {

/// \brief Slots of `max_seq_len` positions, each reserved whole by one request.
class KVSlotTable {
 public:
  /// \brief `num_slots` free slots of `max_seq_len` positions of `bytes_per_token` bytes
  /// (K and V together). Throws `InvalidArgument` for values < 1.
  KVSlotTable(int num_slots, int max_seq_len, std::int64_t bytes_per_token);

  /// \brief True when a slot is free.
  bool can_allocate() const;
  /// \brief Reserves the lowest free slot at length 0 and returns it. Throws
  /// `InvalidArgument` when every slot is taken.
  int allocate();
  /// \brief Frees `slot`. Throws `InvalidArgument` if it is not allocated.
  void free(int slot);
  /// \brief True when `slot` is an allocated slot.
  bool is_allocated(int slot) const;
  /// \brief Filled positions of `slot`. Throws `InvalidArgument` if it is not allocated.
  int length(int slot) const;
  /// \brief Checks that positions `start_pos .. start_pos + num_tokens - 1` may be written to
  /// `slot`: allocated, `start_pos <= length` (no gap), and the end within `max_seq_len`.
  /// Throws `InvalidArgument` naming the slot and positions otherwise.
  void check_write(int slot, int start_pos, int num_tokens) const;
  /// \brief Records that `slot` now holds positions `0 .. start_pos + num_tokens - 1` (an
  /// earlier `start_pos` drops the old tail), after `check_write`.
  void write(int slot, int start_pos, int num_tokens);
  /// \brief Drops positions `length ..` of `slot`. Throws `InvalidArgument` unless
  /// `0 <= length <= this->length(slot)`.
  void truncate(int slot, int length);

  /// \brief Number of slots.
  int num_slots() const { return static_cast<int>(lengths_.size()); }
  /// \brief Positions per slot.
  int max_seq_len() const { return max_seq_len_; }
  /// \brief Bytes of one position (K and V, all layers).
  std::int64_t bytes_per_token() const { return bytes_per_token_; }
  /// \brief Slots currently allocated.
  int num_allocated() const;
  /// \brief `num_slots × max_seq_len × bytes_per_token`: what the cache holds on the device.
  std::int64_t capacity_bytes() const;
  /// \brief `num_allocated × max_seq_len × bytes_per_token`.
  std::int64_t reserved_bytes() const;
  /// \brief `Σ length × bytes_per_token` over allocated slots.
  std::int64_t used_bytes() const;
  /// \brief `used_bytes / reserved_bytes`, 0 when nothing is reserved.
  double utilization() const;

 private:
  int max_seq_len_;
  std::int64_t bytes_per_token_;
  std::vector<int> lengths_;  // (num_slots) filled positions; -1 = free
};

}  // namespace nanoserve::engine
