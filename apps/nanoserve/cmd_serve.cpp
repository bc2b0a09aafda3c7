// nanoserve serve: the engine behind an OpenAI-compatible HTTP API (chapter 8).
//
//   nanoserve serve --model stories260K.bin --port 8000
//   nanoserve serve -m synthetic:tiny --chat-template tests/data/chat_templates/smollm2.jinja
//   curl localhost:8000/v1/completions -H 'Content-Type: application/json' -d '{"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 32}'
//
// SIGTERM or SIGINT drains: new requests get 503, running ones finish within --drain-timeout
// (what is left then is cancelled with an error event), and the process exits 0.
//
// With --tensor-parallel N (under mpirun -np N) the model is split across the ranks: rank 0
// listens, schedules and samples, the others run its passes over their shards (waiting without
// a deadline between requests) until rank 0 stops. Send SIGTERM to rank 0 to drain (mpirun
// itself ends every rank at once on SIGTERM).
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "apps/nanoserve/commands.h"
#include "apps/nanoserve/model_source.h"
#include "apps/nanoserve/tensor_parallel_cli.h"
#include "apps/nanoserve/server/api_server.h"
#include "common/cli/cli_checks.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/tensor_parallel.h"
#include "common/engine/model/tensor_parallel_group.h"
#include "common/engine/serve/model_executor.h"
#include "common/error.h"
#include "common/io/input_file.h"
#include "common/model_bundle.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"

namespace nanoserve::cli {

namespace {

struct ServeArgs {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string template_file;
  std::string served_name;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string port_file;
  std::string dtype;  // empty: engine::default_dtype() (bf16 on a GPU build, fp32 in the simulator)
  std::string kv_dtype;
  engine::SchedulerConfig sched{};
  int max_model_len = 0;  // 0: the model's context
  int num_kv_blocks = 0;  // 0: room for max_num_seqs full-length requests
  bool no_prefix_caching = false;
  int max_waiting = 256;
  server::ServerOptions server{};
  double drain_timeout_s = 30;
  int tensor_parallel = 1;  // ranks the model is split across (> 1: under mpirun)
};

// The name requests use: --served-model-name, else the file name without its extension.
std::string served_name_of(const ServeArgs& a) {
  if (!a.served_name.empty()) return a.served_name;
  std::string name = a.model.substr(a.model.find_last_of('/') + 1);
  if (name.empty()) name = a.model;
  const size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// Rank 0 (or the only one): the engine and the HTTP API until a signal drains them; the engine
// (and its thread) is gone when this returns.
int serve_requests(const ServeArgs& a, const engine::SchedulerConfig& sc,
                   std::unique_ptr<engine::ModelExecutor> executor, const std::string& device_name,
                   const ModelSource& src, server::ModelText text, bool chat_template,
                   const sigset_t& signals) {
  const Tokenizer& tok = *src.tokenizer;
  engine::AsyncEngineOptions ao;
  ao.max_waiting = a.max_waiting;
  engine::AsyncEngine engine(sc, std::move(executor),
                             [&tok](int prev, int t) { return tok.decode_token(prev, t); }, ao);

  server::ServerOptions so = a.server;
  so.model_name = served_name_of(a);
  so.device = device_name;
  so.max_model_len = sc.max_model_len;
  so.num_kv_blocks = sc.num_kv_blocks;
  so.block_size = sc.block_size;
  server::ApiServer api(so, engine, std::move(text));
  const int port = api.bind(a.host, a.port);
  if (!a.port_file.empty()) {
    std::ofstream(a.port_file) << port << "\n";
  }
  std::fprintf(stderr,
               "nanoserve serve: model '%s' (%s) on http://%s:%d | %s | %d KV blocks of %d, "
               "context %d, chat template %s\n",
               so.model_name.c_str(), src.description.c_str(), a.host.c_str(), port,
               device_name.c_str(), sc.num_kv_blocks, sc.block_size, sc.max_model_len,
               chat_template ? "yes" : "none");

  bool clean = true;
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "nanoserve serve: %s: draining (at most %.0f s)\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT", a.drain_timeout_s);
    clean = api.shutdown(a.drain_timeout_s);
  });
  api.run();
  watcher.join();
  const engine::EngineSnapshot s = engine.snapshot();
  std::fprintf(stderr, "nanoserve serve: stopped (%s; %lld requests finished, %lld tokens)\n",
               clean ? "drained" : "drain deadline passed: the rest was cancelled with an error",
               s.stats.num_finished, s.num_generated_tokens);
  return 0;
}

// `ranks`: the run's ranks under --tensor-parallel N > 1, else null. `signals`: blocked in
// every thread, for the watcher to wait on.
int serve(ServeArgs a, dist::Communicator* ranks, const sigset_t& signals) {
  // Split across ranks, every rank shards the host weights: a directory is read whole.
  const ModelSource src = load_model_source(a.model, a.tokenizer, /*device_only=*/!ranks);
  const Tokenizer& tok = *src.tokenizer;
  server::ModelText text;
  text.tokenizer = &tok;
  text.completion_stop_ids = {tok.eos_id(), tok.bos_id()};  // as `generate`: either ends a text
  text.chat_stop_ids = text.completion_stop_ids;
  const auto* hf = dynamic_cast<const HfBpeTokenizer*>(&tok);
  if (hf) {  // a chat turn ends at any special token (<|im_end|>, <|eot_id|>, …), as `chat`
    for (int id = 0; id < tok.vocab_size(); ++id) {
      if (hf->is_special(id)) text.chat_stop_ids.push_back(id);
    }
  }
  const std::string source = a.template_file.empty()
                                 ? src.chat_template
                                 : read_input_file(a.template_file, "chat template", 1u << 20);
  if (!source.empty()) {
    const std::string bos = hf && tok.bos_id() >= 0 ? hf->piece(tok.bos_id()) : "";
    const std::string eos = hf ? hf->piece(tok.eos_id()) : "";
    text.chat_template.emplace(source, bos, eos);
    text.template_writes_bos = !bos.empty();
  }

  const int context = src.model.config.max_seq_len;
  engine::SchedulerConfig& sc = a.sched;
  sc.max_model_len = a.max_model_len == 0 ? context : a.max_model_len;
  if (sc.max_model_len > context) {
    throw InvalidArgument("--max-model-len " + std::to_string(sc.max_model_len) +
                          " exceeds the model's context of " + std::to_string(context));
  }
  const int blocks_per_request = (sc.max_model_len + sc.block_size - 1) / sc.block_size;
  sc.num_kv_blocks = a.num_kv_blocks > 0 ? a.num_kv_blocks : sc.max_num_seqs * blocks_per_request;
  sc.enable_prefix_caching = !a.no_prefix_caching;
  sc.validate();

  const DType dtype = device_dtype_or_default(a.dtype);
  engine::ModelExecutorOptions eo = engine::executor_options_for(sc);
  eo.activation_dtype = dtype;
  eo.kv_dtype = kv_dtype_or(a.kv_dtype, dtype);
  std::unique_ptr<engine::TensorParallelGroup> group;
  std::unique_ptr<engine::DeviceModel> device;
  if (ranks != nullptr) {
    if (src.quantized) {
      throw InvalidArgument("--tensor-parallel splits dense checkpoints; " + src.description +
                            " is quantized (serve it with --tensor-parallel 1)");
    }
    group = std::make_unique<engine::TensorParallelGroup>(*ranks, src.model.config);
    device = std::make_unique<engine::DeviceModel>(
        engine::shard_model(src.model, group->shard()), dtype);
    eo.tensor_parallel = group.get();
  } else {
    device = src.to_device(dtype);
  }
  auto executor = std::make_unique<engine::ModelExecutor>(*device, eo);
  if (group && group->rank() != 0) {  // rank 0's passes until it stops; idle between requests
    executor->follow(/*wait_forever=*/true);
    return 0;
  }
  std::string device_name = executor->device_name();  // says "tensor-parallel N" when split
  if (group) device_name += " over " + ranks->description();
  const int code = serve_requests(a, sc, std::move(executor), device_name, src, std::move(text),
                                  !source.empty(), signals);
  if (group) group->stop();  // after the engine's last pass: the other ranks return
  return code;
}

int run_serve(const ServeArgs& a) {
  // Signals go to the watcher thread only: block them before any thread starts (MPI's too).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that left is a failed write, not a dead server
  if (a.tensor_parallel == 1) return serve(a, nullptr, signals);
  const std::unique_ptr<dist::Communicator> ranks = join_ranks(a.tensor_parallel, "gpu");
  if (!ranks) return 1;  // a rank > 0 of a run with the wrong number of ranks: rank 0 says so
  return on_every_rank(*ranks, [&] { return serve(a, ranks.get(), signals); });
}

}  // namespace

Action add_serve(CLI::App& parent) {
  auto args = std::make_shared<ServeArgs>();
  ServeArgs& a = *args;
  CLI::App* c = parent.add_subcommand(
      "serve", "OpenAI-compatible HTTP server (completions, chat, SSE streaming, metrics)");
  c->add_option("--model,-m", a.model, "model file, directory or synthetic:<name>")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", a.tokenizer, "tokenizer file (default: found from the model)");
  c->add_option("--chat-template", a.template_file,
                "Jinja chat template file (default: the model's own; none: no chat endpoint)");
  c->add_option("--served-model-name", a.served_name,
                "the model id clients name (default: the model's file name)");
  c->add_option("--host", a.host, "address to listen on (loopback by default)")
      ->capture_default_str();
  c->add_option("--port,-p", a.port, "TCP port; 0 = any free port")->capture_default_str()
      ->check(CLI::Range(0, 65535));
  c->add_option("--port-file", a.port_file, "write the port listened on to this file");
  c->add_option("--dtype", a.dtype,
                 "storage type of weights and activations (default: bf16 on a GPU build, fp32 "
                 "in the simulator)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  c->add_option("--kv-dtype", a.kv_dtype, "storage type of the KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  c->add_option("--max-num-seqs", a.sched.max_num_seqs, "most requests running at once")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  c->add_option("--max-num-batched-tokens", a.sched.max_num_batched_tokens,
                "most tokens per engine step")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  c->add_option("--max-model-len", a.max_model_len,
                "most tokens per request, prompt + output (0 = the model's context)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 24));
  c->add_option("--num-kv-blocks", a.num_kv_blocks,
                "KV blocks in the pool (0 = max-num-seqs full-length requests)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 24));
  c->add_option("--block-size", a.sched.block_size, "tokens per KV block")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  c->add_flag("--no-prefix-caching", a.no_prefix_caching, "do not reuse cached prompt blocks");
  c->add_option("--max-waiting", a.max_waiting,
                "most queued requests; more get 429 with Retry-After")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  c->add_option("--max-connections", a.server.max_connections,
                "HTTP connections served at once (worker threads)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  c->add_option("--max-body-bytes", a.server.max_body_bytes,
                "largest request body; larger ones get 413")->capture_default_str()
      ->check(CLI::Range(size_t(64), size_t(1) << 30));
  c->add_option("--max-tokens-ceiling", a.server.max_tokens_ceiling,
                "most max_tokens one request may ask for")->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--max-n", a.server.limits.max_n, "most choices (n) per request")
      ->capture_default_str()->check(CLI::Range(1, 64));
  c->add_option("--drain-timeout", a.drain_timeout_s,
                "seconds SIGTERM waits for running requests before cancelling them")
      ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  add_tensor_parallel_flag(*c, a.tensor_parallel);
  return [args] { return run_serve(*args); };
}

}  // namespace nanoserve::cli
