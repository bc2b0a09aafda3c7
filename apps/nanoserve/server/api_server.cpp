#include "apps/nanoserve/server/api_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <exception>
#include <stdexcept>

#include "apps/nanoserve/server/openai_response.h"

namespace nanoserve::server {

using nlohmann::json;

ApiServer::ApiServer(ServerOptions options, engine::AsyncEngine& engine, ModelText text)
    : options_(std::move(options)), engine_(engine), text_(std::move(text)),
      http_(std::make_unique<httplib::Server>()) {
  if (text_.tokenizer == nullptr) throw std::invalid_argument("ApiServer: no tokenizer");
  engine_.set_finished_hook([this](const engine::Request& r) { metrics_.observe_finished(r); });
  const int threads = options_.max_connections;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_timeout(2);
  add_routes();
}

ApiServer::~ApiServer() { http_->stop(); }

void ApiServer::send_error(httplib::Response& res, const ApiError& e) {
  metrics_.count_error(e.status());
  res.status = e.status();
  if (e.retry_after_s() > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s()));
  res.set_content(dump_json(e.to_json()), "application/json");
}

void ApiServer::add_routes() {
  httplib::Server& s = *http_;
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const engine::EngineSnapshot snap = engine_.snapshot();
    const bool ok = snap.accepting && !draining_;
    res.status = ok ? 200 : 503;
    json body = {{"status", ok ? "ok" : snap.error.empty() ? "draining" : "failed"}};
    if (!snap.error.empty()) body["error"] = snap.error;
    res.set_content(body.dump(), "application/json");
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json model = {{"id", options_.model_name}, {"object", "model"}, {"created", 0},
                  {"owned_by", "nanoserve"}, {"max_model_len", options_.max_model_len}};
    res.set_content(json({{"object", "list"}, {"data", json::array({model})}}).dump(),
                    "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    // An info metric first (Prometheus' idiom): the model and the device the numbers are from.
    const json label_values = {options_.model_name, options_.device};
    const std::string info =
        "# HELP nanoserve:server_info The served model and the engine's device.\n"
        "# TYPE nanoserve:server_info gauge\nnanoserve:server_info{model=" +
        label_values[0].dump() + ",device=" + label_values[1].dump() + "} 1\n";
    res.set_content(info + metrics_.prometheus(engine_.snapshot()), "text/plain; version=0.0.4");
  });
  add_live_view_routes();
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(req, res, false);
  });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(req, res, true);
  });
  // Everything refused before a handler ran (unknown route 404, body too large 413, …) gets
  // an OpenAI error object too; responses with a body of their own pass through.
  s.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 404) message = "no route " + req.method + " " + req.path;
    if (res.status == 413) {
      message = "the request body is larger than " + std::to_string(options_.max_body_bytes) +
                " bytes (--max-body-bytes)";
    }
    send_error(res, ApiError(res.status, message, res.status >= 500 ? "server_error"
                                                                     : "invalid_request_error"));
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([this](const httplib::Request&, httplib::Response& res,
                                 std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, "internal error: " + what, "server_error"));
  });
}

int ApiServer::bind(const std::string& host, int port) {
  // cpp-httplib listens with a backlog of 5 connections (CPPHTTPLIB_LISTEN_BACKLOG, built into
  // Debian's library). 64 clients whose streams end in the same step reconnect at once; with
  // the accept thread a little late, the kernel drops handshakes beyond 5 and the clients see
  // a reset before any response (bench_serving found it at 64 concurrent streams). Listening
  // again on the socket widens its backlog (Linux takes the new value).
  int listen_fd = -1;
  http_->set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  const bool ok = port == 0 ? (port = http_->bind_to_any_port(host)) > 0
                            : http_->bind_to_port(host, port);
  http_->set_socket_options(httplib::default_socket_options);
  if (!ok) {
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) +
                             " (in use, or not an address of this machine)");
  }
  if (listen_fd < 0 || ::listen(listen_fd, kListenBacklog) != 0) {
    throw std::runtime_error("cannot widen the listen backlog of " + host + ":" +
                             std::to_string(port) + " to " + std::to_string(kListenBacklog));
  }
  return port;
}

void ApiServer::run() { http_->listen_after_bind(); }

void ApiServer::enter() {
  std::lock_guard<std::mutex> lock(mu_);
  ++active_;
}

void ApiServer::leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
  }
  cv_.notify_all();
}

bool ApiServer::shutdown(double drain_timeout_s) {
  draining_ = true;
  const bool clean = engine_.drain(drain_timeout_s);
  // Every stream has its end now; give the handlers a moment to write it.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(5), [&] { return active_ == 0; });
  lock.unlock();
  http_->stop();
  return clean;
}

}  // namespace nanoserve::server
