// A prefill instance of a disaggregated run (disaggregated.h): the continuous-batching loop of
// chapter 4 on prompts only — every request leaves right after its first token, its KV sent to
// the decode instance while the next prompts are computed.
#include <deque>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/engine/disagg/handoff.h"
#include "common/engine/disagg/instances.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {

namespace {

// A hand-off whose KV is still on its way: its blocks stay held until the send completed.
struct InFlight {
  std::int64_t id = 0;
  DeviceBuffer<unsigned char> packed;  // (blocks, 2, n_layers, block_size, kv_dim)
  std::unique_ptr<dist::Transfer> send;
};

struct StreamDeleter {
  void operator()(CUstream_st* s) const { cudaStreamDestroy(s); }
};

}  // namespace

void run_prefill_instance(std::vector<Request> share, const DisaggConfig& config,
                          ModelExecutor& executor, dist::Communicator& comm, Clock& clock,
                          DisaggStats& stats) {
  Scheduler scheduler(config.prefill);
  PagedKVCache& cache = executor.kv_cache();
  cudaStream_t raw = nullptr;
  CUDA_CHECK(cudaStreamCreate(&raw));  // the sends' stream: they never wait behind a pass
  std::unique_ptr<CUstream_st, StreamDeleter> send_stream(raw);
  std::deque<InFlight> in_flight;  // in the order sent (and received)

  auto check = [&](const char* when) {
    if (!config.check_invariants) return;
    if (std::string v = scheduler.check_invariants(); !v.empty()) {
      throw std::logic_error(std::string("prefill instance, ") + when + ": " + v);
    }
  };
  // Completes the sends that are done (oldest first; with `wait`, at least the oldest one).
  auto reap = [&](bool wait) {
    while (!in_flight.empty()) {
      InFlight& f = in_flight.front();
      if (wait) {
        f.send->wait();
        wait = false;
      } else if (!f.send->test()) {
        break;
      }
      scheduler.release_handed_off(f.id);
      in_flight.pop_front();
      check("after a send");
    }
  };
  auto send_header = [&](const HandOff& h) {
    comm.send_message(config.decode_rank, kHandOffTag, h.encode());
  };
  auto send_finished = [&] {
    for (const Request& r : scheduler.take_finished()) send_header(HandOff::of(r, 0));
  };

  std::size_t next = 0;
  while (true) {
    while (next < share.size() && share[next].arrival_s <= clock.now()) {
      scheduler.add_request(std::move(share[next++]));
    }
    send_finished();  // rejections finish at once
    reap(false);
    if (!scheduler.has_unfinished()) {
      if (next == share.size()) break;
      while (!in_flight.empty()) reap(true);  // nothing to compute before the next arrival
      clock.wait_until(share[next].arrival_s);
      continue;
    }
    SchedulerOutput out = scheduler.schedule(clock.now());
    if (out.empty()) {
      // Every block is held by a hand-off in flight: wait for the decode instance to take one.
      scheduler.update(out, {}, clock.now());
      send_finished();
      if (in_flight.empty()) {
        throw std::logic_error("prefill instance: nothing scheduled with " +
                               std::to_string(scheduler.num_waiting()) + " waiting, " +
                               std::to_string(scheduler.num_running()) +
                               " running and no send in flight");
      }
      ++stats.prefill_stalls;
      reap(true);
      continue;
    }
    std::vector<std::int64_t> sampled;
    for (const ScheduledSequence& s : out.seqs) {
      if (s.sample) sampled.push_back(s.seq_id);
    }
    const std::vector<int> tokens = executor.execute(out);  // returns once the KV is written
    ++stats.steps;
    scheduler.update(out, tokens, clock.now());
    std::set<std::int64_t> finished;
    for (const Request& r : scheduler.take_finished()) {
      finished.insert(r.id());
      send_header(HandOff::of(r, 0));
    }
    for (std::int64_t id : sampled) {
      if (finished.count(id) != 0) continue;
      Request r = scheduler.hand_off(id);
      const std::vector<int>& blocks = scheduler.kv().block_table(id).block_ids();
      InFlight f;
      f.id = id;
      f.packed = DeviceBuffer<unsigned char>(blocks.size() * cache.packed_block_bytes());
      cache.pack_blocks(blocks, f.packed.get(), send_stream.get());
      send_header(HandOff::of(r, static_cast<int>(blocks.size())));
      f.send = comm.isend(f.packed.get(), f.packed.bytes(), config.decode_rank, send_stream.get());
      ++stats.handoffs;
      stats.blocks += static_cast<long long>(blocks.size());
      stats.bytes += static_cast<long long>(f.packed.bytes());
      in_flight.push_back(std::move(f));
      stats.max_in_flight = std::max(stats.max_in_flight, static_cast<int>(in_flight.size()));
    }
    check("after a step");
  }
  while (!in_flight.empty()) reap(true);
  HandOff done;
  done.done = true;
  send_header(done);
  stats.kv_blocks_used_at_end = scheduler.kv().pool().num_used_blocks();
}

}  // namespace nanoserve::engine
