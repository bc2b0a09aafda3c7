#include "common/engine/serve/static_batcher.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>
#include <utility>

#include "common/error.h"

namespace nanoserve::engine {

void StaticBatchConfig::validate() const {
  auto positive = [](const char* field, int value) {
    if (value < 1) {
      throw InvalidArgument(std::string("static batch config: ") + field + " = " +
                            std::to_string(value) + " must be >= 1");
    }
  };
  positive("batch_size", batch_size);
  positive("max_model_len", max_model_len);
  positive("num_kv_blocks", num_kv_blocks);
  positive("block_size", block_size);
  if (!(max_wait_s >= 0)) {
    throw InvalidArgument("static batch config: max_wait_s = " + std::to_string(max_wait_s) +
                          " must be >= 0");
  }
}

int worst_case_blocks(const Request& r, int max_model_len, int block_size) {
  // BEGIN EXERCISE ch03.1 "Reserve a request's worst case up front" points=10 minutes=20
  // HINT: A static batch never grows its memory, so it reserves the final length now:
  // HINT: prompt_len + max_tokens, cut by the context (a prompt that fills the context still
  // HINT: samples one token). The last token is never written, so ceil((len - 1) / block_size).
  // STUB: (void)r; (void)max_model_len; (void)block_size;
  // STUB: return 0;  // reserves nothing: every batch "fits"
  // Final length: prompt + max_tokens, cut by the context (a prompt that fills the context
  // still samples one token). The last token is never written to the cache.
  const long long final_len = std::min<long long>(
      (long long)r.prompt_len + r.max_tokens, std::max(max_model_len, r.prompt_len + 1));
  return static_cast<int>((final_len - 1 + block_size - 1) / block_size);
  // END EXERCISE
}

namespace {

/// One batch from admission to its last member's end.
class BatchRunner {
 public:
  BatchRunner(const StaticBatchConfig& config, KVCacheManager& kv, Executor& executor,
              Clock& clock, const Detokenizer& detokenize, ServingRun& run)
      : config_(config), kv_(kv), executor_(executor), clock_(clock),
        detokenize_(detokenize), run_(run) {}

  /// Runs `batch` to completion; `queue` (arrival order) from index `next` on is behind it.
  void run(const std::vector<Request*>& batch, const std::vector<Request>& queue, size_t next) {
    queue_ = &queue;
    next_ = next;
    const double now = clock_.now();
    // Prefill: every member's whole prompt (minus prefix hits), padded to the longest.
    SchedulerOutput out;
    std::vector<Request*> scheduled;
    int longest = 0;
    for (Request* r : batch) {
      r->status = RequestStatus::kRunning;
      r->first_scheduled_s = now;
      r->seq.num_computed_tokens = kv_.allocate(r->seq);
      r->num_prefix_hit_tokens = r->seq.num_computed_tokens;
      // BEGIN EXERCISE ch03.2 "Padding: the rows a static batch wastes" points=10 minutes=20
      // HINT: Every member's prefill is padded to the longest uncached prompt of the batch:
      // HINT: track that length here.
      // STUB: (void)longest;
      longest = std::max(longest, r->seq.num_tokens() - r->seq.num_computed_tokens);
      // END EXERCISE
    }
    for (Request* r : batch) {
      const int rows = r->seq.num_tokens() - r->seq.num_computed_tokens;
      out.add(*r, kv_.block_table(r->id()), r->seq.num_computed_tokens, rows);
      // BEGIN EXERCISE ch03.2 "Padding: the rows a static batch wastes"
      // HINT: A member with fewer rows than the longest pads the difference.
      // STUB: (void)rows;
      out.num_wasted_rows += longest - rows;
      // END EXERCISE
      scheduled.push_back(r);
    }
    run_.waste.padding_rows += out.num_wasted_rows;
    step(out, scheduled, batch);
    // Decode in lockstep until the last member finishes; finished members idle in the batch.
    while (std::any_of(batch.begin(), batch.end(), [](Request* r) { return !r->finished(); })) {
      out = SchedulerOutput{};
      scheduled.clear();
      for (Request* r : batch) {
        if (r->finished()) {
          // BEGIN EXERCISE ch03.2 "Padding: the rows a static batch wastes"
          // HINT: A finished member still occupies its row until the whole batch ends.
          // STUB:
          ++out.num_wasted_rows;
          // END EXERCISE
          continue;
        }
        kv_.append_slot(r->seq);  // never a copy: nothing is shared but cached prompt blocks
        out.add(*r, kv_.block_table(r->id()), r->seq.num_computed_tokens, 1);
        scheduled.push_back(r);
      }
      run_.waste.idle_rows += out.num_wasted_rows;
      step(out, scheduled, batch);
    }
    for (Request* r : batch) kv_.free(r->id());  // the batch's memory goes all at once
  }

 private:
  void step(const SchedulerOutput& out, const std::vector<Request*>& scheduled,
            const std::vector<Request*>& batch) {
    StepSample sample;
    sample.num_running = static_cast<int>(batch.size());
    for (size_t j = next_; j < queue_->size() && (*queue_)[j].arrival_s <= clock_.now(); ++j) {
      ++sample.num_waiting;  // arrived, waiting for the whole batch to finish
    }
    sample.num_scheduled = static_cast<int>(scheduled.size());
    sample.num_batched_tokens = out.num_batched_tokens();
    sample.num_wasted_rows = out.num_wasted_rows;
    sample.kv_blocks_used = kv_.pool().num_used_blocks();
    sample.kv_slots_used = kv_.metrics().used_slots;
    run_.waste.useful_rows += out.num_batched_tokens();

    const std::vector<int> tokens = executor_.execute(out);
    const double now = clock_.now();
    for (size_t i = 0; i < scheduled.size(); ++i) {
      Request& r = *scheduled[i];
      r.seq.num_computed_tokens = out.seqs[i].end_pos();
      append_token(r, tokens.at(i), now, config_.max_model_len, detokenize_);
    }
    sample.time_s = now;
    run_.steps.push_back(sample);
  }

  const StaticBatchConfig& config_;
  KVCacheManager& kv_;
  Executor& executor_;
  Clock& clock_;
  const Detokenizer& detokenize_;
  ServingRun& run_;
  const std::vector<Request>* queue_ = nullptr;
  size_t next_ = 0;
};

std::string rejection_reason(const Request& r, const StaticBatchConfig& c) {
  if (r.prompt_len > c.max_model_len) {
    return "prompt of " + std::to_string(r.prompt_len) + " tokens is longer than the context (" +
           "max_model_len = " + std::to_string(c.max_model_len) + ")";
  }
  const int need = worst_case_blocks(r, c.max_model_len, c.block_size);
  if (need > c.num_kv_blocks) {
    return "prompt + max_tokens may need " + std::to_string(need) +
           " KV blocks, reserved up front by static batching, but the whole pool has " +
           std::to_string(c.num_kv_blocks);
  }
  return {};
}

}  // namespace

ServingRun run_static(std::vector<Request> workload, const StaticBatchConfig& config,
                      Executor& executor, Clock& clock, const Detokenizer& detokenize) {
  config.validate();
  std::unordered_set<int64_t> ids;
  for (const Request& r : workload) {
    r.validate_new();
    if (!ids.insert(r.id()).second) {
      throw InvalidArgument("run_static: request id " + std::to_string(r.id()) + " repeats");
    }
    if (!r.stop_strings.empty() && !detokenize) {
      throw InvalidArgument("run_static: request " + std::to_string(r.id()) +
                            " has stop strings but no detokenizer was given");
    }
  }
  ServingRun run;
  run.start_s = clock.now();
  run.num_kv_blocks = config.num_kv_blocks;
  order_arrivals(workload, run.start_s);
  KVCacheManager kv(config.num_kv_blocks, config.block_size, config.enable_prefix_caching);
  BatchRunner runner(config, kv, executor, clock, detokenize, run);

  const size_t n = workload.size();
  const size_t batch_size = size_t(config.batch_size);
  for (size_t next = 0; next < n;) {
    // Start when the batch is full (or the workload has no more requests), or when its first
    // member has waited max_wait_s — and never before the previous batch is done.
    const size_t last = std::min(next + batch_size, n) - 1;
    clock.wait_until(std::max(clock.now(), std::min(workload[last].arrival_s,
                                                    workload[next].arrival_s + config.max_wait_s)));
    std::vector<Request*> batch;
    int reserved = 0;
    while (next < n && batch.size() < batch_size && workload[next].arrival_s <= clock.now()) {
      Request& r = workload[next];
      if (std::string reason = rejection_reason(r, config); !reason.empty()) {
        finish_request(r, FinishReason::kRejected, std::move(reason), r.arrival_s);
        ++next;
        continue;
      }
      const int need = worst_case_blocks(r, config.max_model_len, config.block_size);
      if (reserved + need > config.num_kv_blocks) break;  // the batch closes early
      reserved += need;
      batch.push_back(&r);
      ++next;
    }
    if (!batch.empty()) runner.run(batch, workload, next);
  }
  run.kv = kv.metrics();
  run.end_s = run.start_s;
  for (const Request& r : workload) run.end_s = std::max(run.end_s, r.finished_s);
  run.requests = std::move(workload);
  std::sort(run.requests.begin(), run.requests.end(),
            [](const Request& a, const Request& b) { return a.id() < b.id(); });
  return run;
}

}  // namespace nanoserve::engine
