#include "common/engine/disagg/disaggregated.h"

#include <string>
#include <utility>

#include "common/engine/disagg/instances.h"
#include "common/error.h"

namespace nanoserve::engine {

void DisaggConfig::validate(int num_ranks) const {
  const std::string who = "disaggregated run: ";
  if (num_ranks < 2) {
    throw InvalidArgument(who + "needs at least 2 ranks (one prefill, one decode instance), got " +
                          std::to_string(num_ranks) + " (start it with mpirun -np 2 or more)");
  }
  if (decode_rank < 0 || decode_rank >= num_ranks) {
    throw InvalidArgument(who + "decode_rank " + std::to_string(decode_rank) +
                          " is not a rank of the run (0.." + std::to_string(num_ranks - 1) + ")");
  }
  prefill.validate();
  decode.validate();
  if (prefill.block_size != decode.block_size) {
    throw InvalidArgument(who + "block_size differs: prefill " + std::to_string(prefill.block_size) +
                          ", decode " + std::to_string(decode.block_size) +
                          " (blocks travel whole)");
  }
  if (prefill.max_model_len != decode.max_model_len) {
    throw InvalidArgument(who + "max_model_len differs: prefill " +
                          std::to_string(prefill.max_model_len) + ", decode " +
                          std::to_string(decode.max_model_len));
  }
  const int blocks = (decode.max_model_len + decode.block_size - 1) / decode.block_size;
  if (decode.num_kv_blocks < blocks) {
    throw InvalidArgument(who + "the decode pool's " + std::to_string(decode.num_kv_blocks) +
                          " blocks cannot hold one request of max_model_len = " +
                          std::to_string(decode.max_model_len) + " tokens (" +
                          std::to_string(blocks) + " blocks)");
  }
}

ServingRun run_disaggregated(std::vector<Request> workload, const DisaggConfig& config,
                             ModelExecutor& executor, dist::Communicator& comm, Clock& clock,
                             DisaggStats* stats) {
  config.validate(comm.size());
  for (const Request& r : workload) {
    if (r.n != 1) {
      throw InvalidArgument("disaggregated run: request " + std::to_string(r.id()) +
                            " asks for n = " + std::to_string(r.n) +
                            " parallel samples; a disaggregated run hands off single requests");
    }
  }
  DisaggStats local;
  DisaggStats& s = stats != nullptr ? *stats : local;
  comm.barrier();  // every rank starts its clock's offsets together
  order_arrivals(workload, clock.now());
  ServingRun run;
  if (comm.rank() == config.decode_rank) {
    run = run_decode_instance(std::move(workload), config, executor, comm, clock, s);
  } else {
    // Prefill instance k serves requests k, k + P, … (P prefill ranks, in rank order).
    const int k = comm.rank() < config.decode_rank ? comm.rank() : comm.rank() - 1;
    const int num_prefill = comm.size() - 1;
    std::vector<Request> share;
    for (std::size_t i = std::size_t(k); i < workload.size(); i += std::size_t(num_prefill)) {
      share.push_back(std::move(workload[i]));
    }
    run.start_s = clock.now();
    run.num_kv_blocks = config.prefill.num_kv_blocks;
    run_prefill_instance(std::move(share), config, executor, comm, clock, s);
  }
  comm.barrier();
  return run;
}

}  // namespace nanoserve::engine
