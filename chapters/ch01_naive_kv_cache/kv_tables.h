#pragma once
/// \file
/// \brief Chapter 1's memory tables: KV bytes per token of the loaded model, reserved versus
/// used KV for a batch of mixed-length requests, and the `kv-memory` calculator for real model
/// shapes. Each prints a fixed-width table and appends its rows to the JSON report.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/format_bytes.h"
#include "common/engine/kv/kv_memory.h"
#include "common/harness/request_mix.h"
#include "common/model_config.h"

namespace nanoserve::ch01 {

/// \brief Prints the KV-per-token formula worked out for `config` at `bytes_per_element`, and
/// what one `max_seq_len` reservation costs.
void print_kv_per_token(const ModelConfig& config, int bytes_per_element, int max_seq_len,
                        nlohmann::json& records);

/// \brief One request of the utilization replay, at the moment it finished.
struct RequestUsage {
  harness::RequestShape shape;  ///< its lengths
  int cached = 0;              ///< positions it filled
  std::int64_t reserved = 0;   ///< bytes its region reserved
  std::int64_t used = 0;       ///< bytes it filled
};

/// \brief The utilization replay's outcome.
struct UtilizationResult {
  std::vector<RequestUsage> requests;  ///< per request, at completion
  std::vector<std::int64_t> reserved_over_time;  ///< (steps) reserved bytes after each step
  std::vector<std::int64_t> used_over_time;      ///< (steps) used bytes after each step
  double at_completion = 0;  ///< Σ used / Σ reserved, each request at its end
  double time_average = 0;   ///< Σ_t used(t) / Σ_t reserved(t)
};

/// \brief Replays `requests` as a batch through a `KVRegionTable` of one `max_seq_len` region
/// each, exactly as the engine's `NaiveKVCache` books them: all start together, step 0
/// prefills every prompt, each later step appends one position per unfinished request, and a
/// request frees its region when its last token is sampled. Only the bookkeeping runs (the
/// values in the cache do not change the bytes). Throws `InvalidArgument` if a request does not
/// fit `max_seq_len`.
UtilizationResult replay_utilization(const std::vector<harness::RequestShape>& requests,
                                     int max_seq_len, std::int64_t bytes_per_token);

/// \brief Prints the per-request table and the two utilization figures.
void print_utilization(const UtilizationResult& r, int max_seq_len, nlohmann::json& records);

/// \brief Prints the calculator for `models` (synthetic_config names) in fp16 and fp32 at
/// `context` positions per request and `batch` requests.
void print_kv_memory(const std::vector<std::string>& models, int context, int batch,
                     nlohmann::json& records);

}  // namespace nanoserve::ch01
