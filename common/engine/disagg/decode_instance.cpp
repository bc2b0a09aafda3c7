// The decode instance of a disaggregated run (disaggregated.h): chapter 4's continuous batching
// over requests whose prompts were computed elsewhere — each adopted with fresh blocks that the
// received KV fills, in the order the prefill instances handed them off, as blocks allow.
#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/engine/disagg/handoff.h"
#include "common/engine/disagg/instances.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {

namespace {

struct Pending {
  int source = 0;  // the prefill rank its KV comes from
  int num_blocks = 0;
  Request request;
};

}  // namespace

ServingRun run_decode_instance(std::vector<Request> workload, const DisaggConfig& config,
                               ModelExecutor& executor, dist::Communicator& comm, Clock& clock,
                               DisaggStats& stats) {
  ServingRun run;
  run.start_s = clock.now();
  run.num_kv_blocks = config.decode.num_kv_blocks;
  Scheduler scheduler(config.decode);
  PagedKVCache& cache = executor.kv_cache();
  std::unordered_map<std::int64_t, Request> not_handed;  // the workload, until handed off
  for (Request& r : workload) {
    const std::int64_t id = r.id();
    not_handed.emplace(id, std::move(r));
  }
  std::deque<Pending> pending;  // handed off, waiting for blocks here (FCFS)
  DeviceBuffer<unsigned char> staging;
  int prefill_ranks_done = 0;
  const int prefill_ranks = comm.size() - 1;

  auto check = [&](const char* when) {
    if (!config.check_invariants) return;
    if (std::string v = scheduler.check_invariants(); !v.empty()) {
      throw std::logic_error(std::string("decode instance, ") + when + ": " + v);
    }
  };
  auto collect = [&] {
    for (Request& r : scheduler.take_finished()) run.requests.push_back(std::move(r));
  };
  auto handle = [&](const dist::Message& m) {
    const HandOff h = HandOff::decode(m.bytes);
    if (h.done) {
      ++prefill_ranks_done;
      return;
    }
    auto it = not_handed.find(h.id);
    if (it == not_handed.end()) {
      throw InvalidArgument("decode instance: hand-off of request " + std::to_string(h.id) +
                            " from rank " + std::to_string(m.source) +
                            ", which is not in the workload or was handed off already");
    }
    Request r = std::move(it->second);
    not_handed.erase(it);
    h.apply_to(r);
    if (r.finished()) {
      run.requests.push_back(std::move(r));
    } else {
      pending.push_back(Pending{m.source, h.num_blocks, std::move(r)});
    }
  };
  // Adopts the oldest hand-offs while blocks allow; each one's KV is received and unpacked
  // before the next step reads it.
  auto adopt = [&] {
    while (!pending.empty()) {
      Pending& p = pending.front();
      if (!scheduler.can_adopt(p.request)) {
        ++stats.deferred_adoptions;
        return;
      }
      const std::int64_t id = p.request.id();
      const int expected = (p.request.prompt_len + config.decode.block_size - 1) /
                           config.decode.block_size;
      if (p.num_blocks != expected) {
        throw InvalidArgument("decode instance: request " + std::to_string(id) + " comes with " +
                              std::to_string(p.num_blocks) + " blocks, its prompt needs " +
                              std::to_string(expected));
      }
      const int cached = scheduler.adopt(std::move(p.request));
      const std::size_t block_bytes = cache.packed_block_bytes();
      const std::size_t bytes = std::size_t(p.num_blocks) * block_bytes;
      if (staging.bytes() < bytes) staging = DeviceBuffer<unsigned char>(bytes);
      comm.irecv(staging.get(), bytes, p.source, executor.stream())->wait();
      // Blocks served by this instance's own prefix cache keep their KV; the rest is unpacked.
      const std::vector<int>& table = scheduler.kv().block_table(id).block_ids();
      const std::size_t skip = std::size_t(cached / config.decode.block_size);
      cache.unpack_blocks(std::vector<int>(table.begin() + std::ptrdiff_t(skip), table.end()),
                          staging.get() + skip * block_bytes, executor.stream());
      CUDA_CHECK(cudaStreamSynchronize(executor.stream()));
      ++stats.handoffs;
      stats.blocks += p.num_blocks;
      stats.bytes += static_cast<long long>(bytes);
      pending.pop_front();
      check("after an adoption");
    }
  };

  while (true) {
    while (std::optional<dist::Message> m = comm.poll_message(kHandOffTag)) handle(*m);
    adopt();
    if (!scheduler.has_unfinished()) {
      if (prefill_ranks_done == prefill_ranks && pending.empty()) break;
      if (pending.empty()) handle(comm.wait_message(kHandOffTag));  // idle until one arrives
      if (!pending.empty() && !scheduler.has_unfinished() && !scheduler.can_adopt(pending.front().request)) {
        throw std::logic_error("decode instance: request " +
                               std::to_string(pending.front().request.id()) +
                               " does not fit the idle pool of " +
                               std::to_string(config.decode.num_kv_blocks) + " blocks");
      }
      continue;
    }
    SchedulerOutput out = scheduler.schedule(clock.now());
    StepSample sample;
    sample.num_running = scheduler.num_running();
    sample.num_waiting = scheduler.num_waiting() + static_cast<int>(pending.size());
    sample.num_scheduled = static_cast<int>(out.seqs.size());
    sample.num_batched_tokens = out.num_batched_tokens();
    sample.kv_blocks_used = scheduler.kv().pool().num_used_blocks();
    sample.num_preempted = static_cast<int>(out.preempted_ids.size());
    if (out.empty()) {  // only preemptions or capacity finishes happened
      scheduler.update(out, {}, clock.now());
      collect();
      continue;
    }
    const std::vector<int> tokens = executor.execute(out);
    ++stats.steps;
    scheduler.update(out, tokens, clock.now());
    sample.time_s = clock.now();
    run.steps.push_back(sample);
    collect();
    check("after a step");
  }
  if (!not_handed.empty()) {
    throw std::logic_error("decode instance: every prefill rank is done but " +
                           std::to_string(not_handed.size()) + " requests were never handed off");
  }
  run.num_preemptions = scheduler.stats().num_preemptions;
  run.kv = scheduler.kv().metrics();
  run.end_s = run.start_s;
  for (const Request& r : run.requests) run.end_s = std::max(run.end_s, r.finished_s);
  std::sort(run.requests.begin(), run.requests.end(),
            [](const Request& a, const Request& b) { return a.id() < b.id(); });
  stats.kv_blocks_used_at_end = scheduler.kv().pool().num_used_blocks();
  return run;
}

}  // namespace nanoserve::engine
