#include "chapters/ch09_distributed/modeled_disagg.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/error.h"
#include "common/harness/fake_executor.h"
#include "common/harness/workload.h"

namespace nanoserve::ch09 {

namespace {

// A pass costs what the roofline model says on the simulated clock; its tokens are the fake
// model's (a function of each request's own context and seed, so every setup produces the
// same tokens and the runs can be compared request by request).
class ModeledPasses final : public engine::Executor {
 public:
  ModeledPasses(const harness::PassTimer& timer, engine::SimulatedClock& clock, int vocab)
      : timer_(timer), clock_(clock), vocab_(vocab) {}
  std::vector<int> execute(const engine::SchedulerOutput& out) override {
    clock_.advance(timer_(out));
    std::vector<int> tokens;
    for (const engine::ScheduledSequence& s : out.seqs) {
      if (!s.sample) continue;
      const engine::Sequence& seq = s.request->seq;
      tokens.push_back(harness::fake_next_token(seq.sampling, seq.token_ids.data(), s.end_pos(), vocab_));
    }
    return tokens;
  }

 private:
  const harness::PassTimer& timer_;
  engine::SimulatedClock& clock_;
  int vocab_;
};

std::vector<std::vector<engine::Request>> deal(const std::vector<engine::Request>& w, int n) {
  std::vector<std::vector<engine::Request>> shares(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < w.size(); ++i) shares[i % std::size_t(n)].push_back(w[i]);
  return shares;
}

void finish_run(engine::ServingRun& run) {
  std::sort(run.requests.begin(), run.requests.end(),
            [](const engine::Request& a, const engine::Request& b) { return a.id() < b.id(); });
  run.end_s = 0;
  for (const engine::Request& r : run.requests) run.end_s = std::max(run.end_s, r.finished_s);
}

}  // namespace

std::vector<engine::Request> long_workload(const LongWorkload& w, int vocab_size) {
  harness::WorkloadSpec spec;
  spec.num_requests = w.num_requests;
  spec.rate = w.rate;
  spec.prompt_len = harness::LengthDist::log_normal(w.prompt_median, 0.5, 16, w.prompt_max);
  spec.max_tokens = harness::LengthDist::uniform(w.output_min, w.output_max);
  spec.seed = w.seed;
  harness::RequestDefaults defaults;
  defaults.vocab_size = vocab_size;
  defaults.bos_id = 1;
  defaults.sampling.temperature = 0.8f;
  std::vector<engine::Request> requests =
      harness::make_requests(harness::generate_workload(spec), defaults);
  for (engine::Request& r : requests) {
    if (r.id() % 2 == 0) r.seq.sampling.temperature = 0.0f;
  }
  return requests;
}

double ModeledSetup::kv_bytes(int prompt_len) const {
  const ModelConfig& c = timer.config;
  const int bs = decode.block_size;
  const double blocks = double((prompt_len + bs - 1) / bs);
  return blocks * 2.0 * c.n_layers * bs * double(c.n_kv_heads) * c.head_dim *
         timer.precision.kv_bytes;
}

ModeledRun modeled_colocated(const std::vector<engine::Request>& workload, const ModeledSetup& s) {
  ModeledRun m;
  m.gpus = s.num_prefill + 1;
  m.config = "colocated x" + std::to_string(m.gpus) + ", chunked prefill " +
             std::to_string(s.colocated.max_num_batched_tokens);
  for (std::vector<engine::Request>& share : deal(workload, m.gpus)) {
    engine::SimulatedClock clock;
    ModeledPasses passes(s.timer, clock, s.timer.config.vocab_size);
    engine::ServingRun r = engine::run_continuous(std::move(share), s.colocated, passes, clock);
    for (engine::Request& q : r.requests) m.run.requests.push_back(std::move(q));
    m.run.steps.insert(m.run.steps.end(), r.steps.begin(), r.steps.end());
    m.run.num_preemptions += r.num_preemptions;
  }
  m.run.num_kv_blocks = s.colocated.num_kv_blocks;
  finish_run(m.run);
  return m;
}

ModeledRun modeled_disaggregated(const std::vector<engine::Request>& workload,
                                 const ModeledSetup& s) {
  if (s.link == nullptr) throw InvalidArgument("modeled_disaggregated: no link");
  ModeledRun m;
  m.gpus = s.num_prefill + 1;
  m.config = "disaggregated " + std::to_string(s.num_prefill) + "P+1D, " + s.link->label;
  // 1. Prefill instances: each request runs to its first token (max_tokens 1 here), then
  //    leaves; its KV is ready at the decode GPU one transfer later.
  struct HandOff {
    double ready_s;
    engine::Request request;
  };
  std::vector<HandOff> handoffs;
  const int vocab = s.timer.config.vocab_size;
  for (std::vector<engine::Request>& share : deal(workload, s.num_prefill)) {
    std::vector<engine::Request> prompts = share;
    for (engine::Request& r : prompts) r.max_tokens = 1;
    engine::SimulatedClock clock;
    ModeledPasses passes(s.timer, clock, vocab);
    const engine::ServingRun done = engine::run_continuous(std::move(prompts), s.prefill, passes, clock);
    for (std::size_t i = 0; i < done.requests.size(); ++i) {
      const engine::Request& p = done.requests[i];
      auto orig = std::find_if(share.begin(), share.end(),
                               [&](const engine::Request& r) { return r.id() == p.id(); });
      engine::Request r = *orig;
      r.first_scheduled_s = p.first_scheduled_s;
      r.num_prefix_hit_tokens = p.num_prefix_hit_tokens;
      if (p.num_output_tokens() == 0) {  // rejected
        m.run.requests.push_back(p);
        continue;
      }
      const double t = p.token_times_s.front();
      if (engine::append_token(r, p.output_tokens().front(), t, s.decode.max_model_len, {})) {
        m.run.requests.push_back(std::move(r));  // finished by its first token
        continue;
      }
      const double bytes = s.kv_bytes(r.prompt_len);
      const double transfer = roofline::transfer_s(*s.link, bytes);
      m.kv_bytes += bytes;
      m.transfer_s.push_back(transfer);
      ++m.handoffs;
      handoffs.push_back({t + transfer, std::move(r)});
    }
  }
  std::stable_sort(handoffs.begin(), handoffs.end(),
                   [](const HandOff& a, const HandOff& b) { return a.ready_s < b.ready_s; });
  // 2. The decode instance: adopts each request once its KV has arrived, in arrival order.
  engine::Scheduler decode(s.decode);
  engine::SimulatedClock clock;
  ModeledPasses passes(s.timer, clock, vocab);
  std::size_t next = 0;
  while (true) {
    while (next < handoffs.size() && handoffs[next].ready_s <= clock.now() &&
           decode.can_adopt(handoffs[next].request)) {
      decode.adopt(std::move(handoffs[next++].request));
    }
    if (!decode.has_unfinished()) {
      if (next == handoffs.size()) break;
      if (handoffs[next].ready_s <= clock.now()) {
        throw InvalidArgument("modeled_disaggregated: request " +
                              std::to_string(handoffs[next].request.id()) +
                              " does not fit the idle decode pool");
      }
      clock.wait_until(handoffs[next].ready_s);
      continue;
    }
    engine::SchedulerOutput out = decode.schedule(clock.now());
    if (out.empty()) {
      decode.update(out, {}, clock.now());
    } else {
      const std::vector<int> tokens = passes.execute(out);
      decode.update(out, tokens, clock.now());
      engine::StepSample step;
      step.time_s = clock.now();
      step.num_running = decode.num_running();
      step.num_batched_tokens = out.num_batched_tokens();
      step.num_scheduled = static_cast<int>(out.seqs.size());
      m.run.steps.push_back(step);
    }
    for (engine::Request& r : decode.take_finished()) m.run.requests.push_back(std::move(r));
  }
  m.run.num_kv_blocks = s.decode.num_kv_blocks;
  m.run.num_preemptions = decode.stats().num_preemptions;
  finish_run(m.run);
  return m;
}

}  // namespace nanoserve::ch09
