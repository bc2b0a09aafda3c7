// Chapter 9: beyond one GPU — disaggregated prefill and decode over a real communication library.
//
//   ch09_distributed --tour                       the modeled comparison (one process)
//   ch09_distributed --cost-device h100 --link ib400 --rate 4
//   mpirun -np 2 ch09_distributed --disaggregated --model stories260K.bin
//   mpirun -np 2 ch09_distributed --tensor-parallel 2 --model stories260K.bin
//
// Without mpirun: what moving KV and all-reducing activations cost on each link, then a
// long-prompt, long-output workload served colocated (chunked prefill, one engine per GPU) and
// disaggregated (prefill GPUs hand each request's KV to a decode GPU): TTFT and inter-token
// latency, counts from the engine's schedulers in virtual time, times from the roofline model.
// Under mpirun with --disaggregated: the same protocol for real on the model, rank 0 decoding,
// the others prefilling, over MPI (or NCCL on GPUs); tokens compared with the colocated engine.
// With --tensor-parallel N (under mpirun -np N): the model split across the N ranks, Megatron's
// way; rank 0 schedules and broadcasts each pass; tokens compared with the whole model's.
// README.md is the tutorial that walks through this file.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "chapters/ch09_distributed/modeled_disagg.h"
#include "chapters/ch09_distributed/real_disagg.h"
#include "chapters/ch09_distributed/real_tensor_parallel.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/dist/mpi_communicator.h"
#include "common/engine/model/device_info.h"
#include "common/error.h"
#include "common/harness/serving_metrics.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::ch09 {
namespace {

struct Args {
  std::string model = default_model_spec();  // the real run's model (--disaggregated)
  std::string shape = "llama3-8b";           // the modeled comparison's shape
  std::string cost_device;                   // default h200
  std::string link = "all";
  LongWorkload workload;
  int num_prefill = 1;
  int chunk = 512;
  bool disaggregated = false;
  int tensor_parallel = 0;  // 0: no tensor-parallel run
  RealRunOptions real;
  std::string dtype = "fp32";  // the real runs' types (exact token equality is their check)
  std::string kv_dtype;        // empty: --dtype
  bool tour = false;
  std::string json;
};

std::vector<const roofline::Link*> chosen_links(const std::string& key) {
  std::vector<const roofline::Link*> out;
  if (key == "all") {
    for (const roofline::Link& l : roofline::links()) out.push_back(&l);
  } else {
    out.push_back(&roofline::find_link(key));
  }
  return out;
}

ModeledSetup make_setup(const Args& a, const roofline::Device& device) {
  ModeledSetup s;
  const ModelConfig shape = synthetic_config(a.shape);
  s.timer = harness::PassTimer{shape, roofline::Precision::dense(2), &device, {}, {}};
  s.num_prefill = a.num_prefill;
  engine::SchedulerConfig base;
  base.block_size = 16;
  base.max_model_len = std::min(shape.max_seq_len, a.workload.prompt_max + a.workload.output_max);
  base.num_kv_blocks = 8192;  // 131072 tokens: never the limit here (the model says so)
  base.max_num_seqs = 128;
  s.colocated = base;
  s.colocated.max_num_batched_tokens = a.chunk;
  s.prefill = base;
  s.prefill.max_num_batched_tokens = std::max(a.chunk, base.max_model_len);  // whole prompts
  s.decode = base;
  s.decode.max_num_batched_tokens = base.max_num_seqs;
  return s;
}

// What a link costs: one median request's KV, and the all-reduces of a decode step under
// tensor parallelism (2 per layer of the batch's activations).
void print_links(const ModeledSetup& s, const Args& a, nlohmann::json& report) {
  const ModelConfig& c = s.timer.config;
  const double kv = s.kv_bytes(a.workload.prompt_median);
  const double act = double(c.dim) * s.timer.precision.activation_bytes;  // one token's row
  std::printf("== links (%s, bf16): moving one prompt's KV, all-reducing a decode step — modeled ==\n",
              a.shape.c_str());
  std::printf("  KV of a %d-token prompt: %.1f MiB; a decode step all-reduces 2 x %d layers x "
              "(batch x %d x 2 B)\n", a.workload.prompt_median, kv / (1 << 20), c.n_layers, c.dim);
  std::printf("  %-12s %10s %12s   %s\n", "link", "GB/s/dir", "KV hand-off",
              "TP all-reduces per decode step, batch 1 / 64: TP 2, 4, 8");
  for (const roofline::Link& l : roofline::links()) {
    std::printf("  %-12s %10.0f %9.2f ms  ", l.label, l.bandwidth / 1e9,
                1e3 * roofline::transfer_s(l, kv));
    nlohmann::json rec = {{"table", "links"}, {"link", l.key}, {"bandwidth_gbs", l.bandwidth / 1e9},
                          {"kv_bytes", kv}, {"kv_transfer_ms", 1e3 * roofline::transfer_s(l, kv)},
                          {"source", l.source}};
    for (int batch : {1, 64}) {
      for (int tp : {2, 4, 8}) {
        const double ms = 1e3 * 2 * c.n_layers * roofline::all_reduce_s(l, act * batch, tp);
        std::printf(" %6.2f", ms);
        rec["allreduce_ms_b" + std::to_string(batch) + "_tp" + std::to_string(tp)] = ms;
      }
      std::printf(batch == 1 ? "  /" : " ms\n");
    }
    report["records"].push_back(rec);
  }
}

void print_comparison(const ModeledSetup& s, const Args& a, const roofline::Device& device,
                      nlohmann::json& report) {
  const std::vector<engine::Request> w = long_workload(a.workload, s.timer.config.vocab_size);
  std::printf("\n== colocated vs disaggregated: %d requests at %.1f/s, prompts ~%d (<= %d), "
              "outputs %d-%d, %s ==\n", a.workload.num_requests, a.workload.rate,
              a.workload.prompt_median, a.workload.prompt_max, a.workload.output_min,
              a.workload.output_max, a.shape.c_str());
  std::printf("  counts: the engine's schedulers in virtual time; times: %s, bf16\n",
              cli::modeled_label(device).c_str());
  std::printf("  %-40s %4s %9s %9s %8s %8s %9s %9s\n", "setup", "GPUs", "TTFT p50", "TTFT p99",
              "ITL p50", "ITL p99", "tok/s", "KV moved");
  std::vector<ModeledRun> runs{modeled_colocated(w, s)};
  for (const roofline::Link* l : chosen_links(a.link)) {
    ModeledSetup with = s;
    with.link = l;
    runs.push_back(modeled_disaggregated(w, with));
  }
  int same = 0;
  for (const ModeledRun& m : runs) {
    const harness::ServingMetrics x = harness::compute_metrics(m.run);
    std::printf("  %-40s %4d %7.0fms %7.0fms %6.1fms %6.1fms %9.0f %7.0fMB\n", m.config.c_str(),
                m.gpus, 1e3 * x.ttft.p50, 1e3 * x.ttft.p99, 1e3 * x.itl.p50, 1e3 * x.itl.p99,
                x.output_tokens_per_s, m.kv_bytes / 1e6);
    bool equal = m.run.requests.size() == runs[0].run.requests.size();
    for (std::size_t i = 0; equal && i < m.run.requests.size(); ++i) {
      equal = m.run.requests[i].seq.token_ids == runs[0].run.requests[i].seq.token_ids;
    }
    same += equal;
    nlohmann::json rec = harness::metrics_record(m.config, x);
    rec["table"] = "comparison";
    rec["gpus"] = m.gpus;
    rec["kv_bytes"] = m.kv_bytes;
    rec["handoffs"] = m.handoffs;
    report["records"].push_back(rec);
  }
  std::printf("  every setup produced the colocated run's tokens: %s (%d of %zu)\n",
              same == int(runs.size()) ? "yes" : "NO", same, runs.size());
}

void print_real(const RealRunResult& r, const dist::Communicator& comm, const std::string& model,
                nlohmann::json& report) {
  const std::string types = r.dtype == "fp32" && r.kv_dtype == "fp32"
                                ? ""
                                : ", " + r.dtype + " (KV " + r.kv_dtype + ")";
  std::printf("== disaggregated run: %d prefill + 1 decode instance (%s), %s%s, kernels on %s ==\n",
              comm.size() - 1, comm.description().c_str(), model.c_str(), types.c_str(),
              engine::device_name().c_str());
  std::printf("  requests %d, hand-offs %lld, KV blocks moved %lld (%.1f KiB), blocks left in use %lld\n",
              r.num_requests, r.handoffs, r.blocks, double(r.bytes) / 1024, r.blocks_left);
  std::printf("  back-pressure: decode deferred %lld adoptions, prefill waited %lld times for a send\n",
              r.deferred_adoptions, r.prefill_stalls);
  std::printf("  passes: prefill %lld, decode %lld\n", r.prefill_steps, r.decode_steps);
  std::printf("  tokens equal to the colocated engine's: %d of %d%s\n", r.tokens_equal,
              r.num_requests, r.tokens_equal == r.num_requests ? "" : "  FAILED");
  report["records"].push_back({{"table", "real_disaggregated"}, {"ranks", comm.size()},
                               {"requests", r.num_requests}, {"handoffs", r.handoffs},
                               {"blocks", r.blocks}, {"bytes", r.bytes},
                               {"deferred_adoptions", r.deferred_adoptions},
                               {"prefill_stalls", r.prefill_stalls},
                               {"tokens_equal", r.tokens_equal}});
}

// Every rank: the tensor-parallel run; rank 0 prints. A failure on one rank ends them all.
int run_tensor_parallel(const Args& a) {
  dist::MpiCommunicator comm;
  try {
    if (comm.size() != a.tensor_parallel) {
      throw InvalidArgument("--tensor-parallel " + std::to_string(a.tensor_parallel) +
                            " needs as many ranks: mpirun -np " +
                            std::to_string(a.tensor_parallel) + " (this run has " +
                            std::to_string(comm.size()) + ")");
    }
    const ModelBundle b = load_model_bundle(a.model);
    const TensorParallelRunResult r = run_real_tensor_parallel(b.model, comm, a.real);
    if (!r.is_rank0) return 0;
    nlohmann::json report = make_report("ch09_distributed --tensor-parallel", "kernels",
                                        engine::device_name());
    const std::string name = b.model.config.name.substr(b.model.config.name.find_last_of('/') + 1);
    print_tensor_parallel(r, b.model.config, comm, name, report);
    if (!a.json.empty()) write_json(a.json, report);
    return !r.exact || r.tokens_equal == r.num_requests ? 0 : 1;
  } catch (const std::exception& e) {
    if (comm.size() == 1) throw;  // one rank: the usual one-line error
    std::fprintf(stderr, "ch09_distributed: rank %d: error: %s\n", comm.rank(), e.what());
    std::fflush(stderr);
    comm.abort(1);
  }
}

int run(const Args& a) {
  if (a.tensor_parallel > 0) return run_tensor_parallel(a);
  if (a.disaggregated) {
    dist::MpiCommunicator comm;
    try {
      const ModelBundle b = load_model_bundle(a.model);
      const engine::DeviceModel dm(b.model, a.real.dtype);
      const RealRunResult r = run_real_disaggregated(dm, comm, a.real);
      if (!r.is_decode_rank) return 0;
      nlohmann::json report = make_report("ch09_distributed --disaggregated", "kernels",
                                          engine::device_name());
      const std::string name = b.model.config.name.substr(b.model.config.name.find_last_of('/') + 1);
      print_real(r, comm, name, report);
      if (!a.json.empty()) write_json(a.json, report);
      return r.tokens_equal == r.num_requests && r.blocks_left == 0 ? 0 : 1;
    } catch (const std::exception& e) {
      if (comm.size() == 1) throw;  // one rank: the usual one-line error
      std::fprintf(stderr, "ch09_distributed: rank %d: error: %s\n", comm.rank(), e.what());
      std::fflush(stderr);
      comm.abort(1);  // the other ranks would wait for this one: end them all
    }
  }
  const roofline::Device& device = roofline::find_device(a.cost_device.empty() ? "h200" : a.cost_device);
  nlohmann::json report = make_report("ch09_distributed", "modeled", device.name);
  const ModeledSetup s = make_setup(a, device);
  report["cost_model"] = cli::cost_model_json(device, s.timer.precision);
  print_links(s, a, report);
  print_comparison(s, a, device, report);
  std::printf("\nThe hand-off for real (the model, its KV moved by MPI between processes):\n"
              "  mpirun -np 2 ch09_distributed --disaggregated --model %s\n", a.model.c_str());
  std::printf("The model split across ranks for real (tensor parallelism, TP 2):\n"
              "  mpirun -np 2 ch09_distributed --tensor-parallel 2 --model %s\n", a.model.c_str());
  if (!a.json.empty()) write_json(a.json, report);
  return 0;
}

}  // namespace
}  // namespace nanoserve::ch09

int main(int argc, char** argv) {
  nanoserve::ch09::Args a;
  CLI::App app{"Chapter 9: beyond one GPU (see chapters/ch09_distributed/README.md)"};
  app.add_option("--model,-m", a.model, "the model of the real run (--disaggregated)")
      ->capture_default_str();
  app.add_option("--shape", a.shape, "the model shape of the modeled comparison (synthetic:<name>)")
      ->capture_default_str()->check(CLI::IsMember(nanoserve::synthetic_model_names()));
  nanoserve::cli::add_cost_device_flag(app, a.cost_device)->description(
      "the GPU of the modeled comparison (default h200)");
  app.add_option("--link", a.link, "link between prefill and decode GPUs: all, " +
                 nanoserve::roofline::link_keys())->capture_default_str()
      ->check([](const std::string& v) {
        if (v == "all") return std::string();
        try { nanoserve::roofline::find_link(v); } catch (const std::exception& e) { return std::string(e.what()); }
        return std::string();
      });
  app.add_option("--num-requests", a.workload.num_requests, "requests of the modeled workload")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--rate", a.workload.rate, "arrivals per second")->capture_default_str()
      ->check(CLI::Range(1e-3, 1e6));
  app.add_option("--prompt-median", a.workload.prompt_median, "median prompt tokens")
      ->capture_default_str()->check(CLI::Range(16, 1 << 20));
  app.add_option("--num-prefill", a.num_prefill, "prefill GPUs (one decode GPU; colocated: as many GPUs)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--chunk", a.chunk, "colocated engines' token budget per pass (chunked prefill)")
      ->capture_default_str()->check(CLI::Range(16, 1 << 20));
  CLI::Option* disagg = app.add_flag("--disaggregated", a.disaggregated,
      "run the hand-off for real (under mpirun -np 2 or more: rank 0 decodes)");
  app.add_option("--tensor-parallel", a.tensor_parallel,
                 "run the model split across N ranks for real (under mpirun -np N)")
      ->check(CLI::Range(1, 64))->excludes(disagg);
  app.add_option("--decode-blocks", a.real.decode_blocks, "--disaggregated: the decode pool")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--dtype", a.dtype, "--disaggregated / --tensor-parallel: weights and activations "
                 "(fp32 by default: the runs check exact token equality)")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "--disaggregated / --tensor-parallel: the KV caches "
                 "(default: --dtype)")->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--json", a.json, "also write every row as JSON records to this path");
  app.add_flag("--tour", a.tour, "what scripts/tour.sh runs: the links and the modeled comparison");
  return nanoserve::cli::run_program("ch09_distributed", app, argc, argv, [&] {
    if (a.tour && app.count("--num-requests") == 0) a.workload.num_requests = 32;
    a.real.dtype = nanoserve::parse_dtype(a.dtype);
    a.real.kv_dtype = a.kv_dtype.empty() ? a.real.dtype : nanoserve::parse_dtype(a.kv_dtype);
    // Room for the long tail of longer prompts, within the shape's context.
    const int context = nanoserve::synthetic_config(a.shape).max_seq_len;
    a.workload.prompt_max = std::min(std::max(a.workload.prompt_max, 2 * a.workload.prompt_median),
                                     context - a.workload.output_max);
    if (a.workload.prompt_median > a.workload.prompt_max) {
      throw nanoserve::InvalidArgument("--prompt-median " + std::to_string(a.workload.prompt_median) +
                                       " leaves no room for " + std::to_string(a.workload.output_max) +
                                       " output tokens in " + a.shape + "'s context of " +
                                       std::to_string(context));
    }
    return nanoserve::ch09::run(a);
  });
}
