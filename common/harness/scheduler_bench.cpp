#include "common/harness/scheduler_bench.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/engine/serve/scheduler.h"
#include "common/harness/workload.h"
#include "common/error.h"

namespace nanoserve::harness {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

SchedulerBenchResult bench_scheduler(const SchedulerBenchOptions& o) {
  if (o.num_seqs < 1 || o.prompt_tokens < 1 || o.decode_steps < 2 || o.block_size < 1) {
    throw InvalidArgument("bench_scheduler: num_seqs, prompt_tokens and block_size must be "
                          ">= 1 and decode_steps >= 2");
  }
  // The config multiplies these: keep every product an int (and the run's memory sane).
  if (o.num_seqs > kMaxBenchSeqs || o.prompt_tokens > 65536 || o.decode_steps > 65536) {
    throw InvalidArgument("bench_scheduler: num_seqs = " + std::to_string(o.num_seqs) +
                          " (limit " + std::to_string(kMaxBenchSeqs) + "), prompt_tokens = " +
                          std::to_string(o.prompt_tokens) + " and decode_steps = " +
                          std::to_string(o.decode_steps) + " (limit 65536 each)");
  }
  if (int64_t(o.num_seqs) * (o.prompt_tokens + o.decode_steps + 2) > (1 << 28)) {
    throw InvalidArgument("bench_scheduler: num_seqs x (prompt_tokens + decode_steps) = " +
                          std::to_string(int64_t(o.num_seqs) * (o.prompt_tokens + o.decode_steps)) +
                          " tokens exceed the limit of 2^28");
  }
  constexpr int kVocab = 32000;
  const int max_len = o.prompt_tokens + o.decode_steps + 2;
  engine::SchedulerConfig config;
  config.max_num_seqs = o.num_seqs;
  config.max_num_batched_tokens = o.num_seqs * o.prompt_tokens;  // prefill all in one step
  config.max_model_len = max_len;
  config.block_size = o.block_size;
  config.num_kv_blocks = o.num_seqs * ((max_len + o.block_size - 1) / o.block_size);
  config.enable_prefix_caching = o.prefix_caching;
  engine::Scheduler scheduler(config);
  for (int i = 0; i < o.num_seqs; ++i) {
    std::vector<int> prompt = synthetic_prompt(o.prompt_tokens, o.seed + uint64_t(i), kVocab);
    prompt.reserve(size_t(max_len));  // appending a token never reallocates
    engine::Request r = engine::make_request(i, std::move(prompt), o.decode_steps + 1, SamplingParams{});
    scheduler.add_request(std::move(r));
  }
  std::vector<int> tokens;
  auto step = [&](int k, double* schedule_us, double* update_us) {
    auto t0 = Clock::now();
    const engine::SchedulerOutput out = scheduler.schedule();
    const double s = us_since(t0);
    tokens.assign(size_t(out.num_sampled()), 0);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int((i * 7919 + size_t(k)) % kVocab);
    t0 = Clock::now();
    scheduler.update(out, tokens);
    const double u = us_since(t0);
    if (schedule_us != nullptr) *schedule_us += s;
    if (update_us != nullptr) *update_us += u;
    return out.seqs.size();
  };
  step(0, nullptr, nullptr);  // the prefill of every prompt, not timed
  SchedulerBenchResult r;
  r.num_seqs = o.num_seqs;
  for (int k = 1; k < o.decode_steps; ++k) {  // step 0 sampled the first token
    if (int(step(k, &r.schedule_us, &r.update_us)) != o.num_seqs) {
      throw std::logic_error("bench_scheduler: a step did not schedule every sequence");
    }
    ++r.steps;
  }
  r.schedule_us /= double(r.steps);
  r.update_us /= double(r.steps);
  return r;
}

}  // namespace nanoserve::harness
