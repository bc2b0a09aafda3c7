#include "chapters/ch02_paged_kv_cache/served_utilization.h"

#include <algorithm>
#include <cstdio>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/error.h"
#include "common/format_bytes.h"
#include "common/harness/workload.h"
#include "common/sampling/sampler.h"

namespace nanoserve::ch02 {

ServedUtilization serve_utilization(const engine::DeviceModel& model,
                                    const std::vector<harness::RequestShape>& mix,
                                    const UtilizationConfig& c, const ServedConfig& served) {
  // Each request may grow to its cap: the whole context unless `max_new_tokens` says less.
  std::vector<harness::RequestShape> shapes = mix;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    harness::RequestShape& r = shapes[i];
    if (i < served.prompts.size()) {
      r.prompt_tokens = std::min<int>(r.prompt_tokens, int(served.prompts[i].size()));
    }
    r.output_tokens = c.max_seq_len - r.prompt_tokens + 1;  // cached = max_seq_len at most
    if (served.max_new_tokens > 0) r.output_tokens = std::min(r.output_tokens, served.max_new_tokens);
  }
  replay_utilization(shapes, c);  // the same checks: the batch fits the budget at its caps
  const ModelConfig& mc = model.config();
  const std::size_t n = mix.size();
  const int num_blocks = int(std::int64_t(c.regions) * c.max_seq_len / c.block_size);
  engine::KVCacheManager manager(num_blocks, c.block_size, /*enable_prefix_caching=*/false);
  engine::PagedKVCache cache(mc, served.kv_dtype.value_or(model.dtype()), num_blocks, c.block_size,
                             std::min(c.max_seq_len, mc.max_seq_len));
  int prompt_rows = 0;
  for (const harness::RequestShape& r : shapes) prompt_rows += r.prompt_tokens;
  engine::ModelRunner runner(model, {std::max(prompt_rows, int(n)), int(n)});

  ServedUtilization run;
  run.served = shapes;
  for (const harness::RequestShape& r : shapes) run.caps.push_back(r.output_tokens);
  std::vector<engine::Sequence> seqs(n);
  std::vector<engine::Sequence*> live;
  engine::ForwardBatch batch;
  for (std::size_t i = 0; i < n; ++i) {
    engine::Sequence& s = seqs[i];
    s.seq_id = std::int64_t(i);
    if (i < served.prompts.size()) {
      s.token_ids.assign(served.prompts[i].begin(),
                         served.prompts[i].begin() + shapes[i].prompt_tokens);
    } else {
      s.token_ids = harness::synthetic_prompt(shapes[i].prompt_tokens, served.seed + i,
                                              mc.vocab_size, /*bos_id=*/1);
    }
    s.sampling.temperature = served.temperature;
    s.sampling.seed = served.seed + i;
    run.served[i].output_tokens = 0;
    manager.allocate(s);
    batch.add_chunk(s.seq_id, s.token_ids.data(), s.num_tokens(), 0, &manager.block_table(i));
    batch.logit_rows.push_back(batch.rows() - 1);
    live.push_back(&s);
  }
  double paged_used = 0, paged_alloc = 0, naive_used = 0, naive_reserved = 0;
  const int vocab = mc.vocab_size;
  while (!live.empty()) {
    const std::vector<float> logits = runner.forward(batch, cache);
    ++run.steps;
    const engine::KVCacheMetrics m = manager.metrics();
    paged_used += double(m.used_slots);
    paged_alloc += double(m.allocated_slots);
    naive_used += double(m.used_slots);
    naive_reserved += double(live.size()) * c.max_seq_len;
    run.paged_peak = std::max(run.paged_peak, double(m.allocated_slots * c.bytes_per_token));
    // Every live request samples; EOS or its cap ends it, the rest feed the token back.
    std::vector<engine::Sequence*> next;
    batch = engine::ForwardBatch{};
    for (std::size_t k = 0; k < live.size(); ++k) {
      engine::Sequence& s = *live[k];
      harness::RequestShape& shape = run.served[std::size_t(s.seq_id)];
      const int token = sample(logits.data() + k * std::size_t(vocab), vocab, s.sampling,
                               std::uint64_t(s.num_tokens()));
      ++shape.output_tokens;
      ++run.generated;
      const bool capped = shape.output_tokens == run.caps[std::size_t(s.seq_id)];
      const bool stop = std::find(served.stop_tokens.begin(), served.stop_tokens.end(), token) !=
                        served.stop_tokens.end();
      if (stop || capped) {
        manager.free(s.seq_id);  // its last token is sampled, never fed back
        continue;
      }
      s.token_ids.push_back(token);
      manager.append_slot(s);  // nothing is shared: no copies
      batch.add_chunk(s.seq_id, &s.token_ids.back(), 1, s.num_tokens() - 1,
                      &manager.block_table(s.seq_id));
      batch.logit_rows.push_back(batch.rows() - 1);
      next.push_back(&s);
    }
    live = std::move(next);
  }
  run.paged_time_average = paged_alloc > 0 ? paged_used / paged_alloc : 0;
  run.naive_time_average = naive_reserved > 0 ? naive_used / naive_reserved : 0;
  const std::string broken = manager.check_invariants();
  if (!broken.empty()) throw Error("utilization (served): KV cache invariant broken: " + broken);
  return run;
}

void print_served_utilization(const ServedUtilization& run, const UtilizationConfig& c,
                              const ServedConfig& served, nlohmann::json& records) {
  const std::vector<CacheUtilization> replay = replay_utilization(run.served, c);
  char how[48] = "greedy";
  if (served.temperature > 0) std::snprintf(how, sizeof how, "temperature %.2f", served.temperature);
  std::printf("\n== utilization of a served run: the %zu requests generated by the model from %s"
              " (%s; EOS or the cap ends each) ==\n", run.served.size(),
              served.prompt_source.c_str(), how);
  std::printf("  %-11s %6s %10s %10s\n", "request", "prompt", "output cap", "generated");
  for (std::size_t i = 0; i < run.served.size(); ++i) {
    std::printf("  %-11s %6d %10d %10d\n", run.served[i].name.c_str(),
                run.served[i].prompt_tokens, run.caps[i], run.served[i].output_tokens);
  }
  std::printf("\n  %-22s %10s %10s   (%d steps, %lld tokens generated)\n", "cache", "over time",
              "replayed", run.steps, static_cast<long long>(run.generated));
  std::printf("  %-22s %9.1f%% %9.1f%%\n", "naive contiguous", 100.0 * run.naive_time_average,
              100.0 * replay[0].time_average);
  std::printf("  %-22s %9.1f%% %9.1f%%   peak %s\n",
              ("paged, block " + std::to_string(c.block_size)).c_str(),
              100.0 * run.paged_time_average, 100.0 * replay[1].time_average,
              format_bytes(std::int64_t(run.paged_peak)).c_str());
  std::printf("  over time: used / reserved after every step of the served run (paged: measured on\n"
              "  the live block manager); replayed: the same lengths through the bookkeeping only\n");
  std::vector<int> generated;
  for (const harness::RequestShape& r : run.served) generated.push_back(r.output_tokens);
  records.push_back({{"table", "utilization_served"}, {"block_size", c.block_size},
                     {"max_seq_len", c.max_seq_len}, {"regions", c.regions},
                     {"steps", run.steps}, {"generated", run.generated},
                     {"output_tokens", generated},
                     {"naive_time_average", run.naive_time_average},
                     {"paged_time_average", run.paged_time_average},
                     {"replayed_naive_time_average", replay[0].time_average},
                     {"replayed_paged_time_average", replay[1].time_average},
                     {"paged_peak_bytes", run.paged_peak}});
}

}  // namespace nanoserve::ch02
