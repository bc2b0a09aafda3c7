#include "common/engine/serve/serving_loop.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace nanoserve::engine {

void order_arrivals(std::vector<Request>& workload, double start_s) {
  std::stable_sort(workload.begin(), workload.end(),
                   [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  for (Request& r : workload) r.arrival_s += start_s;
}

ServingRun run_continuous(std::vector<Request> workload, const SchedulerConfig& config,
                          Executor& executor, Clock& clock, const Detokenizer& detokenize,
                          Drafter* drafter) {
  ServingRun run;
  run.start_s = clock.now();
  run.num_kv_blocks = config.num_kv_blocks;
  order_arrivals(workload, run.start_s);
  Scheduler scheduler(config, detokenize);

  size_t next = 0;  // first request not yet added
  auto collect = [&] {
    for (Request& r : scheduler.take_finished()) run.requests.push_back(std::move(r));
  };
  while (true) {
    while (next < workload.size() && workload[next].arrival_s <= clock.now()) {
      scheduler.add_request(std::move(workload[next++]));
    }
    collect();  // rejections finish at once
    if (!scheduler.has_unfinished()) {
      if (next == workload.size()) break;
      clock.wait_until(workload[next].arrival_s);
      continue;
    }
    const long long finished_before = scheduler.stats().num_finished;
    SchedulerOutput out = scheduler.schedule(clock.now());
    StepSample sample;
    sample.num_running = scheduler.num_running();
    sample.num_waiting = scheduler.num_waiting();
    sample.num_scheduled = static_cast<int>(out.seqs.size());
    sample.num_batched_tokens = out.num_batched_tokens();
    sample.num_draft_rows = out.num_draft_rows();
    sample.kv_blocks_used = scheduler.kv().pool().num_used_blocks();
    sample.kv_slots_used = scheduler.kv().metrics().used_slots;
    sample.num_preempted = static_cast<int>(out.preempted_ids.size());
    sample.host_blocks_used = scheduler.kv().metrics().host_blocks_in_use;
    const bool swaps = !out.blocks_to_swap_out.empty() || !out.blocks_to_swap_in.empty();
    if (out.empty() && !swaps) {
      scheduler.update(out, {}, clock.now());
      if (out.preempted_ids.empty() && scheduler.stats().num_finished == finished_before) {
        throw std::logic_error("run_continuous: the scheduler scheduled nothing with " +
                               std::to_string(scheduler.num_waiting()) + " waiting and " +
                               std::to_string(scheduler.num_running()) + " running requests");
      }
      collect();
      continue;
    }
    const std::vector<int> tokens = executor.execute(out);
    scheduler.update(out, tokens, clock.now());
    sample.time_s = clock.now();
    run.steps.push_back(sample);
    collect();
    if (drafter != nullptr) scheduler.propose_drafts(*drafter);
  }
  run.num_preemptions = scheduler.stats().num_preemptions;
  run.num_swap_outs = scheduler.stats().num_swap_outs;
  run.num_swap_ins = scheduler.stats().num_swap_ins;
  run.num_draft_tokens = scheduler.stats().num_draft_tokens;
  run.num_accepted_tokens = scheduler.stats().num_accepted_tokens;
  run.kv = scheduler.kv().metrics();
  run.end_s = run.start_s;
  for (const Request& r : run.requests) run.end_s = std::max(run.end_s, r.finished_s);
  std::sort(run.requests.begin(), run.requests.end(),
            [](const Request& a, const Request& b) { return a.id() < b.id(); });
  return run;
}

}  // namespace nanoserve::engine
