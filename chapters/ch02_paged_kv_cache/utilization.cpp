#include "chapters/ch02_paged_kv_cache/utilization.h"

#include <cstdio>

#include "common/format_bytes.h"
#include "common/harness/clocks.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/kv/kv_region_table.h"
#include "common/error.h"

namespace nanoserve::ch02 {
namespace {

void validate(const std::vector<harness::RequestShape>& requests, const UtilizationConfig& c) {
  if (c.max_seq_len < 1 || c.regions < 1 || c.block_size < 1 || c.bytes_per_token < 1) {
    throw InvalidArgument("utilization: max_seq_len, regions, block_size and bytes_per_token must "
                          "all be >= 1");
  }
  if (requests.empty()) throw InvalidArgument("utilization: no requests");
  if (static_cast<int>(requests.size()) > c.regions) {
    throw InvalidArgument("utilization: the batch has " + std::to_string(requests.size()) +
                          " requests but the budget holds only " + std::to_string(c.regions) +
                          " naive regions");
  }
  for (const harness::RequestShape& r : requests) {
    if (r.prompt_tokens < 1 || r.output_tokens < 1 || r.cached_positions() > c.max_seq_len) {
      throw InvalidArgument("utilization: request '" + r.name + "' needs " +
                            std::to_string(r.cached_positions()) +
                            " positions; a naive region holds max_seq_len = " +
                            std::to_string(c.max_seq_len));
    }
  }
}

int paged_blocks(const UtilizationConfig& c) {
  const std::int64_t blocks = std::int64_t(c.regions) * c.max_seq_len / c.block_size;
  if (blocks < 1) {
    throw InvalidArgument("utilization: a budget of " + std::to_string(c.regions * c.max_seq_len) +
                          " positions holds no block of " + std::to_string(c.block_size));
  }
  return static_cast<int>(blocks);
}

// Requests of the workload, cycled, admitted in order at their full lengths until the first
// that finds too few free blocks.
int paged_fit_at_once(const std::vector<harness::RequestShape>& requests, int num_blocks,
                      int block_size) {
  engine::KVCacheManager manager(num_blocks, block_size, /*enable_prefix_caching=*/false);
  int admitted = 0;
  for (;; ++admitted) {
    engine::Sequence s;
    s.seq_id = admitted;
    const harness::RequestShape& r = requests[std::size_t(admitted) % requests.size()];
    s.token_ids.assign(std::size_t(r.cached_positions()), 0);
    if (!manager.can_allocate(s)) return admitted;
    manager.allocate(s);  // every request takes >= 1 block, so the loop ends
  }
}

}  // namespace

std::vector<CacheUtilization> replay_utilization(const std::vector<harness::RequestShape>& requests,
                                                 const UtilizationConfig& c) {
  validate(requests, c);
  const int num_blocks = paged_blocks(c);
  const std::size_t n = requests.size();
  engine::KVRegionTable naive(c.regions, c.max_seq_len, c.bytes_per_token);
  engine::KVCacheManager paged(num_blocks, c.block_size, /*enable_prefix_caching=*/false);
  CacheUtilization nu, pu;
  nu.cache = "naive";
  nu.capacity_bytes = naive.capacity_bytes();
  pu.cache = "paged";
  pu.block_size = c.block_size;
  pu.capacity_bytes = std::int64_t(num_blocks) * c.block_size * c.bytes_per_token;
  nu.request_reserved.assign(n, 0);
  pu.request_reserved.assign(n, 0);

  std::vector<int> region(n);
  std::vector<engine::Sequence> seqs(n);
  std::vector<bool> live(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    region[i] = naive.allocate();  // a naive region is reserved in full when the request starts
    seqs[i].seq_id = static_cast<std::int64_t>(i);
  }
  double naive_used = 0, naive_reserved = 0, paged_used = 0, paged_reserved = 0;
  for (int step = 0, remaining = int(n); remaining > 0; ++step) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!live[i]) continue;
      engine::Sequence& s = seqs[i];
      try {
        if (step == 0) {  // the prompt
          naive.write(region[i], 0, requests[i].prompt_tokens);
          s.token_ids.assign(std::size_t(requests[i].prompt_tokens), 0);
          paged.allocate(s);
        } else if (s.num_tokens() < requests[i].cached_positions()) {  // the token sampled last
          naive.write(region[i], s.num_tokens(), 1);
          s.token_ids.push_back(0);
          paged.append_slot(s);
        }
      } catch (const engine::BlockPoolExhausted& e) {
        throw InvalidArgument(std::string("utilization: the batch does not fit the paged budget: ") +
                              e.what());
      }
    }
    const engine::KVCacheMetrics m = paged.metrics();
    nu.reserved_over_time.push_back(naive.reserved_bytes());
    nu.used_over_time.push_back(naive.used_bytes());
    pu.reserved_over_time.push_back(m.allocated_slots * c.bytes_per_token);
    pu.used_over_time.push_back(m.used_slots * c.bytes_per_token);
    naive_reserved += double(nu.reserved_over_time.back());
    naive_used += double(nu.used_over_time.back());
    paged_reserved += double(pu.reserved_over_time.back());
    paged_used += double(pu.used_over_time.back());
    // A request whose cache holds all but its last token samples that token now and leaves.
    for (std::size_t i = 0; i < n; ++i) {
      if (!live[i] || seqs[i].num_tokens() < requests[i].cached_positions()) continue;
      const std::int64_t used = std::int64_t(seqs[i].num_tokens()) * c.bytes_per_token;
      const engine::BlockTable& table = paged.block_table(seqs[i].seq_id);
      nu.request_reserved[i] = std::int64_t(c.max_seq_len) * c.bytes_per_token;
      pu.request_reserved[i] = std::int64_t(table.num_blocks()) * c.block_size * c.bytes_per_token;
      pu.table_entries += table.num_blocks();
      for (CacheUtilization* u : {&nu, &pu}) {
        u->used_bytes += used;
        u->reserved_bytes += u->request_reserved[i];
      }
      naive.free(region[i]);
      paged.free(seqs[i].seq_id);
      live[i] = false;
      --remaining;
    }
  }
  nu.at_completion = double(nu.used_bytes) / double(nu.reserved_bytes);
  pu.at_completion = double(pu.used_bytes) / double(pu.reserved_bytes);
  nu.time_average = naive_used / naive_reserved;
  pu.time_average = paged_used / paged_reserved;
  nu.fit_at_once = c.regions;  // any request of at most max_seq_len positions takes one region
  pu.fit_at_once = paged_fit_at_once(requests, num_blocks, c.block_size);
  return {nu, pu};
}

void print_utilization(const std::vector<CacheUtilization>& r,
                       const std::vector<harness::RequestShape>& requests,
                       const UtilizationConfig& c, nlohmann::json& records) {
  const CacheUtilization& nu = r.at(0);
  const CacheUtilization& pu = r.at(1);
  std::printf("\n== utilization: %zu mixed-length requests, KV budget %s "
              "(%d naive regions x %d positions) ==\n",
              requests.size(), format_bytes(nu.capacity_bytes).c_str(), c.regions, c.max_seq_len);
  std::printf("  %-11s %6s %6s %6s | %10s %6s | %10s %6s\n", "request", "prompt", "output",
              "cached", "naive res.", "util", "paged res.", "util");
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const harness::RequestShape& q = requests[i];
    const double used = double(q.cached_positions()) * double(c.bytes_per_token);
    std::printf("  %-11s %6d %6d %6d | %10s %5.1f%% | %10s %5.1f%%\n", q.name.c_str(),
                q.prompt_tokens, q.output_tokens, q.cached_positions(),
                format_bytes(nu.request_reserved[i]).c_str(),
                100.0 * used / double(nu.request_reserved[i]),
                format_bytes(pu.request_reserved[i]).c_str(),
                100.0 * used / double(pu.request_reserved[i]));
  }
  std::printf("\n  %-22s %10s %10s %10s %8s %8s %8s\n", "cache", "reserved", "used", "wasted",
              "util", "over time", "fit");
  for (const CacheUtilization& u : r) {
    const std::string name =
        u.cache == "naive" ? "naive contiguous" : "paged, block " + std::to_string(u.block_size);
    std::printf("  %-22s %10s %10s %10s %7.1f%% %7.1f%% %8d\n", name.c_str(),
                format_bytes(u.reserved_bytes).c_str(), format_bytes(u.used_bytes).c_str(),
                format_bytes(u.wasted_bytes()).c_str(), 100.0 * u.at_completion,
                100.0 * u.time_average, u.fit_at_once);
    records.push_back({{"table", "utilization"}, {"cache", u.cache}, {"block_size", u.block_size},
                       {"max_seq_len", c.max_seq_len}, {"regions", c.regions},
                       {"bytes_per_token", c.bytes_per_token},
                       {"capacity_bytes", u.capacity_bytes}, {"reserved_bytes", u.reserved_bytes},
                       {"used_bytes", u.used_bytes}, {"wasted_bytes", u.wasted_bytes()},
                       {"at_completion", u.at_completion}, {"time_average", u.time_average},
                       {"fit_at_once", u.fit_at_once}, {"table_entries", u.table_entries},
                       {"reserved_over_time", u.reserved_over_time},
                       {"used_over_time", u.used_over_time}});
  }
  std::printf("  util: used / reserved with each request at its fullest; over time: averaged over\n"
              "  the batch's %zu steps; fit: requests of this mix (repeated) held at full length at\n"
              "  once in the same budget (paged: %s in blocks of %d positions)\n",
              nu.used_over_time.size(), format_bytes(pu.capacity_bytes).c_str(), c.block_size);
}

void print_block_size_sweep(const std::vector<harness::RequestShape>& requests,
                            UtilizationConfig c, const std::vector<int>& block_sizes,
                            nlohmann::json& records) {
  std::printf("\n== block-size sweep: the same batch and budget (%d x %d positions) ==\n", c.regions,
              c.max_seq_len);
  std::printf("  %6s %7s %10s %10s %8s %9s %6s %13s\n", "block", "blocks", "reserved", "wasted",
              "util", "over time", "fit", "table entries");
  for (int bs : block_sizes) {
    c.block_size = bs;
    const CacheUtilization u = replay_utilization(requests, c).at(1);
    std::printf("  %6d %7lld %10s %10s %7.1f%% %8.1f%% %6d %13lld\n", bs,
                static_cast<long long>(u.capacity_bytes / (std::int64_t(bs) * c.bytes_per_token)),
                format_bytes(u.reserved_bytes).c_str(), format_bytes(u.wasted_bytes()).c_str(),
                100.0 * u.at_completion, 100.0 * u.time_average, u.fit_at_once, u.table_entries);
    records.push_back({{"table", "block_size_sweep"}, {"block_size", bs},
                       {"max_seq_len", c.max_seq_len}, {"regions", c.regions},
                       {"capacity_bytes", u.capacity_bytes}, {"reserved_bytes", u.reserved_bytes},
                       {"used_bytes", u.used_bytes}, {"wasted_bytes", u.wasted_bytes()},
                       {"at_completion", u.at_completion}, {"time_average", u.time_average},
                       {"fit_at_once", u.fit_at_once}, {"table_entries", u.table_entries}});
  }
  std::printf("  smaller blocks waste less of the last block but need longer block tables (and,\n"
              "  on a GPU, more scattered reads per key); vLLM's default is 16\n");
}

}  // namespace nanoserve::ch02
