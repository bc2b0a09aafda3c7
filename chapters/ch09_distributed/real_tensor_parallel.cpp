#include "chapters/ch09_distributed/real_tensor_parallel.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/tensor_parallel.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/roofline/link.h"

namespace nanoserve::ch09 {

namespace {

// One engine for the whole workload: chunked prefill (16 tokens a pass), decodes riding along.
engine::SchedulerConfig engine_config(const RealRunOptions& o) {
  engine::SchedulerConfig c;
  c.block_size = o.block_size;
  c.max_model_len = o.max_model_len;
  c.num_kv_blocks = o.prefill_blocks + o.decode_blocks;
  c.max_num_batched_tokens = 16;
  c.max_num_seqs = 8;
  return c;
}

}  // namespace

TensorParallelRunResult run_real_tensor_parallel(const Model& model, dist::Communicator& comm,
                                                 const RealRunOptions& o) {
  // Greedy only: sampled tokens would compare equal too, as long as no random draw falls
  // within the logits' last-bit differences of a CDF boundary (tol::kTensorParallelFp32).
  std::vector<engine::Request> workload = real_workload(o, model.config.vocab_size);
  for (engine::Request& r : workload) r.seq.sampling.temperature = 0.0f;
  const engine::SchedulerConfig config = engine_config(o);

  TensorParallelRunResult r;
  r.is_rank0 = comm.rank() == 0;
  r.exact = o.dtype == DType::kF32;
  r.dtype = dtype_name(o.dtype);
  r.kv_dtype = dtype_name(o.kv_dtype);
  r.num_requests = static_cast<int>(workload.size());
  engine::TensorParallelGroup group(comm, model.config);
  engine::ServingRun run;
  {
    const Model shard = engine::shard_model(model, group.shard());
    const engine::DeviceModel device(shard, o.dtype);
    engine::ModelExecutorOptions options = engine::executor_options_for(config);
    options.kv_dtype = o.kv_dtype;
    options.tensor_parallel = &group;
    engine::ModelExecutor executor(device, options);
    if (r.is_rank0) {
      engine::SimulatedClock clock;  // the tokens are the point; times would be the simulator's
      run = engine::run_continuous(workload, config, executor, clock);
      group.stop();
      r.passes = group.counters().plans;
    } else {
      r.passes = executor.follow();
    }
    r.weight_bytes = device.weight_bytes();
    r.kv_pool_bytes = executor.kv_cache().pool_bytes();
  }
  r.counters = group.counters();
  std::vector<std::int64_t> largest{r.weight_bytes};
  comm.all_reduce(largest.data(), 1, dist::DataType::kI64, dist::ReduceOp::kMax, nullptr);
  r.max_rank_weight_bytes = largest[0];
  if (!r.is_rank0) return r;

  // The same requests through the whole model on this device alone.
  const engine::DeviceModel whole(model, o.dtype);
  engine::ModelExecutorOptions whole_options = engine::executor_options_for(config);
  whole_options.kv_dtype = o.kv_dtype;
  engine::ModelExecutor whole_executor(whole, whole_options);
  engine::SimulatedClock clock;
  const engine::ServingRun want = engine::run_continuous(workload, config, whole_executor, clock);
  r.whole_weight_bytes = whole.weight_bytes();
  r.whole_kv_pool_bytes = whole_executor.kv_cache().pool_bytes();
  for (std::size_t i = 0; i < run.requests.size() && i < want.requests.size(); ++i) {
    r.tokens_equal += run.requests[i].seq.token_ids == want.requests[i].seq.token_ids;
  }
  if (!run.requests.empty()) r.first_tokens = run.requests[0].output_tokens();
  return r;
}

void print_tensor_parallel(const TensorParallelRunResult& r, const ModelConfig& config,
                           const dist::Communicator& comm, const std::string& model_name,
                           nlohmann::json& report) {
  const int n = comm.size();
  const engine::TensorParallelShard s = engine::TensorParallelShard::of(config, 0, n);
  const engine::TensorParallelGroup::Counters& k = r.counters;
  const std::string types = r.dtype == "fp32" && r.kv_dtype == "fp32"
                                ? ""
                                : ", " + r.dtype + " (KV " + r.kv_dtype + ")";
  std::printf("== tensor parallelism: TP %d (%s), %s%s, kernels on %s ==\n", n,
              comm.description().c_str(), model_name.c_str(), types.c_str(),
              engine::device_name().c_str());
  std::printf("  rank 0 holds %d of %d q heads, %d of %d kv heads%s, %d of %d FFN rows, %d of %d "
              "vocabulary rows\n", s.q_heads, config.n_heads, s.kv_heads, config.n_kv_heads,
              s.kv_replicated ? " (copied)" : "", s.hidden, config.hidden_dim, s.vocab,
              config.vocab_size);
  std::printf("  weights: rank 0 %.1f KiB, the largest rank %.1f KiB, the whole model %.1f KiB "
              "(norms replicated); KV pool: rank 0 %.1f of %.1f KiB\n", r.weight_bytes / 1024.0,
              r.max_rank_weight_bytes / 1024.0, r.whole_weight_bytes / 1024.0,
              r.kv_pool_bytes / 1024.0, r.whole_kv_pool_bytes / 1024.0);
  std::printf("  passes %lld: rank 0 broadcast %lld plans (%lld B); each rank ran %lld all-reduces "
              "(%.1f KiB) and %lld all-gathers of logits (%.1f KiB)\n", r.passes, k.plans,
              k.plan_bytes, k.all_reduces, k.all_reduce_bytes / 1024.0, k.all_gathers,
              k.all_gather_bytes / 1024.0);
  std::string tokens;
  for (int t : r.first_tokens) tokens += " " + std::to_string(t);
  std::printf("  request 0's tokens:%s\n", tokens.c_str());
  if (r.exact) {
    std::printf("  tokens equal to the single-process engine's: %d of %d (greedy)%s\n",
                r.tokens_equal, r.num_requests, r.tokens_equal == r.num_requests ? "" : "  FAILED");
  } else {
    std::printf("  tokens equal to the single-process engine's: %d of %d (greedy, %s: each rank "
                "rounds its partial sums before the all-reduce, so near-ties may differ; exact "
                "in fp32)\n", r.tokens_equal, r.num_requests, r.dtype.c_str());
  }
  // A decode step at batch 1: 2L + 1 all-reduces of one fp32 row of the residual stream.
  const double row = double(config.dim) * 4;
  std::printf("  modeled (roofline, not measured): a batch-1 decode step's %d all-reduces of %.0f "
              "B at TP %d:", 2 * config.n_layers + 1, row, n);
  nlohmann::json rec = {{"table", "real_tensor_parallel"}, {"ranks", n},
                        {"requests", r.num_requests}, {"tokens_equal", r.tokens_equal},
                        {"dtype", r.dtype}, {"kv_dtype", r.kv_dtype},
                        {"passes", r.passes}, {"all_reduces", k.all_reduces},
                        {"all_reduce_bytes", k.all_reduce_bytes}, {"all_gathers", k.all_gathers},
                        {"all_gather_bytes", k.all_gather_bytes},
                        {"weight_bytes_rank0", r.weight_bytes},
                        {"weight_bytes_whole", r.whole_weight_bytes}};
  for (const roofline::Link& l : roofline::links()) {
    const double us = 1e6 * (2 * config.n_layers + 1) * roofline::all_reduce_s(l, row, n);
    std::printf("%s %s %.1f us", &l == &roofline::links().front() ? "" : ",", l.label, us);
    rec[std::string("modeled_decode_allreduce_us_") + l.key] = us;
  }
  std::printf("\n");
  report["records"].push_back(rec);
}

}  // namespace nanoserve::ch09
