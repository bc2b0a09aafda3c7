#pragma once
/// \file
/// \brief The `utilization` scenario: chapter 1's mixed-length batch replayed under one KV
/// memory budget, once in a naive contiguous cache (`KVRegionTable`: every request reserves
/// `max_seq_len` positions when it starts) and once in a paged cache (`KVCacheManager`: blocks
/// of `block_size` positions taken as tokens arrive), plus how many requests each cache can
/// hold at once.
///
///     budget = regions × max_seq_len positions     naive: `regions` requests, whatever their length
///                                                paged: budget / block_size blocks, shared by
///                                                as many requests as their blocks fit
///     naive  [▓▓▓▓░░░░░░░░░░░░░░░░]   one region: used ▓, reserved but never used ░
///     paged  [▓▓▓▓][▓▓░░]             ceil(len / block_size) blocks: waste < one block
///
/// Only the bookkeeping runs (the values in the cache do not change the bytes), so the
/// numbers depend on the model only through its KV bytes per token.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/harness/request_mix.h"

namespace nanoserve::ch02 {

/// \brief The budget and the cache geometry of one replay.
struct UtilizationConfig {
  int max_seq_len = 512;             ///< positions a naive region reserves
  int regions = 8;                     ///< naive regions; the budget is regions × max_seq_len positions
  int block_size = 16;               ///< positions per paged block
  std::int64_t bytes_per_token = 1;  ///< K and V of one position, all layers
};

/// \brief One cache's outcome for the batch.
struct CacheUtilization {
  std::string cache;                ///< "naive" or "paged"
  int block_size = 0;               ///< paged only (0 for naive)
  std::int64_t capacity_bytes = 0;  ///< the budget as this cache uses it (paged: whole blocks)
  std::int64_t reserved_bytes = 0;  ///< Σ over requests, each at its fullest
  std::int64_t used_bytes = 0;      ///< Σ positions holding K and V × bytes per token
  double at_completion = 0;         ///< used / reserved, each request at its fullest
  double time_average = 0;          ///< Σ_t used(t) / Σ_t reserved(t) over the batch's steps
  std::vector<std::int64_t> request_reserved;  ///< (requests) bytes each reserved at its fullest
  long long table_entries = 0;      ///< paged: Σ blocks of the requests (block-table size)
  int fit_at_once = 0;              ///< requests of the workload (cycled) held at full length
  std::vector<std::int64_t> reserved_over_time;  ///< (steps) bytes reserved after each step
  std::vector<std::int64_t> used_over_time;      ///< (steps) bytes used after each step

  /// \brief reserved − used at completion: inside a naive region's tail, or a paged request's
  /// partially filled last block (internal fragmentation).
  std::int64_t wasted_bytes() const { return reserved_bytes - used_bytes; }
};

/// \brief Replays `requests` as one batch in a naive cache and in a paged cache under
/// `config`'s budget (the schedule of chapter 1: step 0 writes every prompt, each later step
/// one position per unfinished request, a request leaves when its last token is sampled), and
/// counts how many requests — the workload repeated in order, admitted first come first served
/// until the first that does not fit — each cache holds at their full lengths. Returns
/// {naive, paged}. Throws `InvalidArgument` for sizes < 1, a request longer than
/// `max_seq_len`, or a batch that does not fit the budget at once.
std::vector<CacheUtilization> replay_utilization(const std::vector<harness::RequestShape>& requests,
                                                 const UtilizationConfig& config);

/// \brief Prints naive vs paged for one block size and appends the records.
void print_utilization(const std::vector<CacheUtilization>& result,
                       const std::vector<harness::RequestShape>& requests,
                       const UtilizationConfig& config, nlohmann::json& records);

/// \brief Replays the paged cache at each of `block_sizes` under the same budget, prints the
/// sweep and appends its records.
void print_block_size_sweep(const std::vector<harness::RequestShape>& requests,
                            UtilizationConfig config, const std::vector<int>& block_sizes,
                            nlohmann::json& records);

}  // namespace nanoserve::ch02
