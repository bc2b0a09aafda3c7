#pragma once
/// \file
/// \brief The workload flags chapters 3 and 4 share (one definition, so the two programs read
/// the same command line and run the same workload).
#include <CLI/CLI.hpp>

#include <limits>

#include "common/cli/cli_checks.h"
#include "common/harness/clocks.h"
#include "common/harness/workload_options.h"

namespace nanoserve::harness {

/// \brief Adds `--trace`, `--num-requests`, `--rate`, `--prompt-len`, `--output-len`, `--seed`
/// and `--temperature` to `app`, writing into `w` (its current values are the defaults shown).
/// Each number has its range here; the limits of a trace file are in trace.h.
inline void add_workload_flags(CLI::App& app, harness::WorkloadOptions& w) {
  app.add_option("--trace", w.trace, "JSONL workload (data/traces/*.jsonl) instead of the generator")
      ->check(CLI::ExistingFile);
  app.add_option("--num-requests,-n", w.num_requests, "generator: requests")->capture_default_str()
      ->check(CLI::Range(1, kMaxTraceRequests));
  app.add_option("--rate", w.rate, "generator: Poisson arrivals per second (inf = all at t = 0)")
      ->capture_default_str()
      ->check(cli::number_in(0, std::numeric_limits<double>::infinity(), /*open_low=*/true));
  app.add_option("--prompt-len", w.prompt_len,
                 "generator: fixed:N | uniform:LO:HI | lognormal:MEDIAN:SIGMA:LO:HI | chat")
      ->capture_default_str();
  app.add_option("--output-len", w.output_len, "generator: max_tokens distribution (same forms)")
      ->capture_default_str();
  app.add_option("--seed,-s", w.seed, "generator seed (also keys each request's sampling)")
      ->capture_default_str()->check(cli::seed_range());
  app.add_option("--temperature,-t", w.temperature, "sampling of every request (0 = greedy)")
      ->capture_default_str()->check(cli::number_in(0, 100));
}

}  // namespace nanoserve::harness
