#pragma once
/// \file
/// \brief `ApiServer`: the OpenAI-compatible HTTP front of an `AsyncEngine` (chapter 8), on
/// cpp-httplib. A request's path:
///
///     HTTP worker thread (one per connection, at most max_connections)
///       parse + check the body (openai_request.h) ── 400 / 404 ──► error object
///       template + tokenize, check lengths ─────────── 400 ───────► error object
///       AsyncEngine::submit ──────── queue full 429 / draining 503 (Retry-After)
///       stream:  wait for tokens ─► TextStream (stop strings, UTF-8) ─► SSE chunk ─► socket
///                client gone (write fails) ─► AsyncEngine::cancel: its blocks are freed
///       or:      wait for the end ─► one JSON response
///
/// Routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health,
/// GET /metrics, GET / (the live view), GET /v1/engine/events (its feed).
/// `shutdown` drains: new requests get 503, running ones finish (or are cancelled with an error
/// event at the deadline), then the listener stops.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/nanoserve/server/api_error.h"
#include "apps/nanoserve/server/openai_request.h"
#include "apps/nanoserve/server/server_metrics.h"
#include "common/chat/chat_template.h"
#include "common/engine/serve/async_engine.h"
#include "common/tokenizer/tokenizer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace nanoserve::server {

/// \brief The bounds and names of a server; each is a flag of `nanoserve serve`.
struct ServerOptions {
  std::string model_name = "model";  ///< the id /v1/models lists and requests must name
  std::string device;                ///< where the engine runs, in words (/metrics' server_info)
  size_t max_body_bytes = 1 << 20;   ///< larger bodies get 413
  int max_connections = 64;          ///< HTTP worker threads: connections served at once
  int max_tokens_ceiling = 4096;     ///< most `max_tokens` one request may ask for
  int max_model_len = 256;           ///< the engine's context (prompt + output)
  int num_kv_blocks = 0;             ///< the engine's pool (for the up-front length check)
  int block_size = 16;               ///< tokens per KV block
  int retry_after_s = 1;             ///< Retry-After of 429 and 503
  RequestLimits limits;              ///< n, logprobs and stop bounds
};

/// \brief What the server needs of the model's text side.
struct ModelText {
  const Tokenizer* tokenizer = nullptr;  ///< never null
  std::optional<chat::ChatTemplate> chat_template;  ///< unset: /v1/chat/completions is a 400
  bool template_writes_bos = false;  ///< the template writes BOS as text (do not add it)
  std::vector<int> completion_stop_ids;  ///< ids that end a completion (EOS, BOS)
  std::vector<int> chat_stop_ids;        ///< ids that end a chat turn (EOS, special tokens)
};

/// \brief The engine's state as the live view's feed sends it (counters, requests, blocks).
nlohmann::json snapshot_json(const engine::EngineSnapshot& snapshot);

/// \brief The HTTP server (see the file comment).
class ApiServer {
 public:
  /// \brief Connections the kernel queues for the accept thread (cpp-httplib's own is 5).
  static constexpr int kListenBacklog = 1024;
  /// \brief Routes over `engine` (which must outlive it); registers the metrics hook.
  ApiServer(ServerOptions options, engine::AsyncEngine& engine, ModelText text);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  /// \brief Binds `host`:`port` (0: any free port); returns the port. Throws
  /// `std::runtime_error` naming the address when it cannot bind.
  int bind(const std::string& host, int port);
  /// \brief Serves until `shutdown` (blocks the calling thread).
  void run();
  /// \brief From another thread (a signal watcher): stop taking requests (503), let the
  /// engine finish within `drain_timeout_s` (then cancel what is left, with an error event),
  /// wait for the handlers to write their ends, stop listening. Returns true when nothing
  /// was cancelled.
  bool shutdown(double drain_timeout_s);

  /// \brief The metrics (for tests).
  const ServerMetrics& metrics() const { return metrics_; }

 private:
  void add_routes();
  void add_live_view_routes();  // live_view.cpp
  void handle_completion(const httplib::Request& req, httplib::Response& res, bool chat);
  void send_error(httplib::Response& res, const ApiError& e);
  engine::Request build_request(const CompletionRequest& c);
  /// Counts a handler that writes a response body while the engine works (drain waits).
  void enter();
  void leave();

  ServerOptions options_;
  engine::AsyncEngine& engine_;
  ModelText text_;
  ServerMetrics metrics_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<uint64_t> next_seed_{0};
  std::atomic<bool> draining_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;  // handlers in flight (guarded by mu_)
};

}  // namespace nanoserve::server
