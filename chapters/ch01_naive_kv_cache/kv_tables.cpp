#include "chapters/ch01_naive_kv_cache/kv_tables.h"

#include <algorithm>
#include <cstdio>

#include "common/engine/kv/kv_region_table.h"
#include "common/error.h"
#include "common/loaders/synthetic_model.h"

namespace nanoserve::ch01 {

void print_kv_per_token(const ModelConfig& c, int bytes, int max_seq_len, nlohmann::json& records) {
  const std::int64_t per_token = c.kv_bytes_per_token(bytes);
  const std::string name = c.name.substr(c.name.find_last_of('/') + 1);  // file name only
  std::printf("\n== KV cache: bytes per token (%s) ==\n", name.c_str());
  std::printf("  2 (K and V) x %d layers x %d KV heads x %d head_dim x %d bytes = %lld bytes per token\n",
              c.n_layers, c.n_kv_heads, c.head_dim, bytes, static_cast<long long>(per_token));
  std::printf("  one request reserves max_seq_len = %d positions: %s\n", max_seq_len,
              format_bytes(per_token * max_seq_len).c_str());
  records.push_back({{"table", "kv_per_token"}, {"model", name}, {"bytes_per_element", bytes},
                     {"n_layers", c.n_layers}, {"n_kv_heads", c.n_kv_heads},
                     {"head_dim", c.head_dim}, {"bytes_per_token", per_token},
                     {"max_seq_len", max_seq_len}, {"bytes_per_request", per_token * max_seq_len}});
}

UtilizationResult replay_utilization(const std::vector<harness::RequestShape>& requests,
                                     int max_seq_len, std::int64_t bytes_per_token) {
  engine::KVRegionTable table(static_cast<int>(requests.size()), max_seq_len, bytes_per_token);
  UtilizationResult r;
  std::vector<int> region(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].cached_positions() > max_seq_len) {
      throw InvalidArgument("request '" + requests[i].name + "' needs " +
                            std::to_string(requests[i].cached_positions()) +
                            " positions but a region holds max_seq_len = " +
                            std::to_string(max_seq_len));
    }
    region[i] = table.allocate();  // reserved in full when the request starts
    r.requests.push_back({requests[i], 0, 0, 0});
  }
  double used_sum = 0, reserved_sum = 0;
  for (int step = 0; table.num_allocated() > 0; ++step) {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      RequestUsage& u = r.requests[i];
      if (!table.is_allocated(region[i]) || u.reserved > 0) continue;
      const int len = table.length(region[i]);
      // Step 0 writes the prompt; each later step the token sampled one step before.
      if (step == 0) {
        table.write(region[i], 0, u.shape.prompt_tokens);
      } else if (len < u.shape.cached_positions()) {
        table.write(region[i], len, 1);
      }
    }
    reserved_sum += double(table.reserved_bytes());
    used_sum += double(table.used_bytes());
    r.reserved_over_time.push_back(table.reserved_bytes());
    r.used_over_time.push_back(table.used_bytes());
    // A request whose cache holds all but its last token samples that token now and leaves.
    for (std::size_t i = 0; i < requests.size(); ++i) {
      RequestUsage& u = r.requests[i];
      if (u.reserved > 0 || table.length(region[i]) < u.shape.cached_positions()) continue;
      u.cached = table.length(region[i]);
      u.used = std::int64_t(u.cached) * bytes_per_token;
      u.reserved = std::int64_t(max_seq_len) * bytes_per_token;
      table.free(region[i]);
    }
  }
  std::int64_t used = 0, reserved = 0;
  for (const RequestUsage& u : r.requests) {
    used += u.used;
    reserved += u.reserved;
  }
  r.at_completion = reserved > 0 ? double(used) / double(reserved) : 0.0;
  r.time_average = reserved_sum > 0 ? used_sum / reserved_sum : 0.0;
  return r;
}

void print_utilization(const UtilizationResult& r, int max_seq_len, nlohmann::json& records) {
  std::printf("\n== KV reserved vs used: %zu requests, one %d-position region each ==\n",
              r.requests.size(), max_seq_len);
  std::printf("  %-12s %7s %7s %7s %12s %12s %6s\n", "request", "prompt", "output", "cached",
              "reserved", "used", "util");
  std::int64_t used = 0, reserved = 0;
  for (const RequestUsage& u : r.requests) {
    std::printf("  %-12s %7d %7d %7d %12s %12s %5.1f%%\n", u.shape.name.c_str(),
                u.shape.prompt_tokens, u.shape.output_tokens, u.cached,
                format_bytes(u.reserved).c_str(), format_bytes(u.used).c_str(),
                100.0 * double(u.used) / double(u.reserved));
    used += u.used;
    reserved += u.reserved;
    records.push_back({{"table", "utilization"}, {"request", u.shape.name},
                       {"prompt_tokens", u.shape.prompt_tokens},
                       {"output_tokens", u.shape.output_tokens}, {"cached_positions", u.cached},
                       {"reserved_bytes", u.reserved}, {"used_bytes", u.used}});
  }
  std::printf("  %-12s %7s %7s %7s %12s %12s %5.1f%%\n", "total", "", "", "",
              format_bytes(reserved).c_str(), format_bytes(used).c_str(), 100.0 * r.at_completion);
  std::printf("  each request at its fullest: %.1f%% of the reserved KV holds keys and values;\n"
              "  averaged over the batch's %zu steps (regions freed as requests finish): %.1f%%\n",
              100.0 * r.at_completion, r.used_over_time.size(), 100.0 * r.time_average);
  records.push_back({{"table", "utilization_summary"}, {"max_seq_len", max_seq_len},
                     {"reserved_bytes", reserved}, {"used_bytes", used},
                     {"at_completion", r.at_completion}, {"time_average", r.time_average},
                     {"reserved_over_time", r.reserved_over_time},
                     {"used_over_time", r.used_over_time}});
}

void print_kv_memory(const std::vector<std::string>& models, int context, int batch,
                     nlohmann::json& records) {
  std::printf("\n== kv-memory: 2 x n_layers x n_kv_heads x head_dim x bytes (context %d, batch %d) ==\n",
              context, batch);
  std::printf("  %-11s %6s %8s %8s %5s %11s %13s %11s %15s\n", "model", "layers", "kv_heads",
              "head_dim", "dtype", "per token", "per request", "per batch", "if GQA ignored");
  for (const std::string& name : models) {
    const ModelConfig c = synthetic_config(name);
    for (int bytes : {2, 4}) {
      const engine::KvMemoryEstimate e = engine::estimate_kv_memory(c, bytes, context, batch);
      std::printf("  %-11s %6d %8d %8d %5s %11s %13s %11s %15s\n", name.c_str(), c.n_layers,
                  c.n_kv_heads, c.head_dim, bytes == 2 ? "fp16" : "fp32",
                  format_bytes(e.bytes_per_token).c_str(),
                  format_bytes(e.bytes_per_request).c_str(),
                  format_bytes(e.bytes_per_batch).c_str(),
                  c.n_kv_heads == c.n_heads
                      ? "(no GQA)"
                      : (format_bytes(e.bytes_per_token_without_gqa) + "/tok").c_str());
      records.push_back({{"table", "kv_memory"}, {"model", name}, {"n_layers", c.n_layers},
                         {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads},
                         {"head_dim", c.head_dim}, {"bytes_per_element", bytes},
                         {"context", context}, {"batch", batch},
                         {"bytes_per_token", e.bytes_per_token},
                         {"bytes_per_request", e.bytes_per_request},
                         {"bytes_per_batch", e.bytes_per_batch},
                         {"bytes_per_token_without_gqa", e.bytes_per_token_without_gqa}});
    }
  }
}

}  // namespace nanoserve::ch01
