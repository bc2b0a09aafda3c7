#include "chapters/ch09_distributed/real_disagg.h"

#include <limits>
#include <stdexcept>
#include <vector>

#include "common/harness/workload.h"

namespace nanoserve::ch09 {

namespace {

engine::SchedulerConfig role(const RealRunOptions& o, int blocks) {
  engine::SchedulerConfig c;
  c.block_size = o.block_size;
  c.max_model_len = o.max_model_len;
  c.num_kv_blocks = blocks;
  c.max_num_batched_tokens = 64;
  c.max_num_seqs = 8;
  return c;
}

}  // namespace

std::vector<engine::Request> real_workload(const RealRunOptions& o, int vocab) {
  harness::WorkloadSpec spec;
  spec.num_requests = o.num_requests;
  spec.rate = std::numeric_limits<double>::infinity();
  spec.prompt_len = harness::LengthDist::log_normal(o.max_prompt / 2.0, 0.6, 6, o.max_prompt);
  spec.max_tokens = harness::LengthDist::uniform(2, o.max_output);
  spec.seed = o.seed;
  harness::RequestDefaults defaults;
  defaults.vocab_size = vocab;
  defaults.bos_id = 1;
  defaults.sampling.temperature = 0.9f;
  std::vector<engine::Request> requests =
      harness::make_requests(harness::generate_workload(spec), defaults);
  for (engine::Request& r : requests) {
    if (r.id() % 2 == 0) r.seq.sampling.temperature = 0.0f;
  }
  return requests;
}

RealRunResult run_real_disaggregated(const engine::DeviceModel& model, dist::Communicator& comm,
                                     const RealRunOptions& o) {
  const std::vector<engine::Request> workload = real_workload(o, model.config().vocab_size);
  engine::DisaggConfig config;
  config.prefill = role(o, o.prefill_blocks);
  config.decode = role(o, o.decode_blocks);
  config.validate(comm.size());
  engine::ModelExecutorOptions options = engine::executor_options_for(config.role(comm.rank()));
  options.kv_dtype = o.kv_dtype;
  engine::ModelExecutor executor(model, options);
  engine::SimulatedClock clock;  // the counts are the point here; times would be the simulator's
  engine::DisaggStats stats;
  const engine::ServingRun run =
      engine::run_disaggregated(workload, config, executor, comm, clock, &stats);

  RealRunResult r;
  r.is_decode_rank = comm.rank() == config.decode_rank;
  r.dtype = dtype_name(model.dtype());
  r.kv_dtype = dtype_name(o.kv_dtype);
  r.num_requests = static_cast<int>(workload.size());
  if (r.is_decode_rank) {
    // The same requests through one colocated engine (chunked prefill, a pool for all).
    engine::SchedulerConfig c = role(o, o.prefill_blocks + o.decode_blocks);
    c.max_num_batched_tokens = 16;
    engine::ModelExecutorOptions colocated_options = engine::executor_options_for(c);
    colocated_options.kv_dtype = o.kv_dtype;
    engine::ModelExecutor colocated_executor(model, colocated_options);
    engine::SimulatedClock colocated_clock;
    const engine::ServingRun colocated =
        engine::run_continuous(workload, c, colocated_executor, colocated_clock);
    for (std::size_t i = 0; i < run.requests.size() && i < colocated.requests.size(); ++i) {
      r.tokens_equal += run.requests[i].seq.token_ids == colocated.requests[i].seq.token_ids;
    }
  }
  // Sum over the ranks: what prefill sent against what decode received.
  std::vector<std::int64_t> v{r.is_decode_rank ? 0 : stats.handoffs,
                              r.is_decode_rank ? stats.handoffs : 0,
                              r.is_decode_rank ? 0 : stats.blocks,
                              r.is_decode_rank ? stats.blocks : 0,
                              stats.bytes,
                              stats.deferred_adoptions,
                              stats.prefill_stalls,
                              r.is_decode_rank ? stats.steps : 0,
                              r.is_decode_rank ? 0 : stats.steps,
                              stats.kv_blocks_used_at_end};
  comm.all_reduce(v.data(), v.size(), dist::DataType::kI64, dist::ReduceOp::kSum, nullptr);
  if (v[0] != v[1] || v[2] != v[3]) {
    throw std::logic_error("disaggregated run: prefill sent " + std::to_string(v[0]) +
                           " hand-offs / " + std::to_string(v[2]) + " blocks, decode received " +
                           std::to_string(v[1]) + " / " + std::to_string(v[3]));
  }
  r.handoffs = v[1];
  r.blocks = v[3];
  r.bytes = v[4] / 2;  // counted once by each side
  r.deferred_adoptions = v[5];
  r.prefill_stalls = v[6];
  r.decode_steps = v[7];
  r.prefill_steps = v[8];
  r.blocks_left = v[9];
  return r;
}

}  // namespace nanoserve::ch09
