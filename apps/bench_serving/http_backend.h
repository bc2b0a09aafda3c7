#pragma once
/// \file
/// \brief bench_serving's HTTP backend: one streamed `POST /v1/completions` per request
/// (`stream: true` with usage, the prompt as token ids), read as server-sent events; each
/// `data:` chunk with text is a point on the request's timeline. Loopback only: the benchmark
/// is a load generator, and the project never aims one at another machine.

#include <string>

#include "apps/bench_serving/backend.h"

namespace nanoserve::bench {

/// \brief host and port of an `http://HOST:PORT` URL whose host is loopback (127.0.0.0/8,
/// localhost, ::1). Throws `InvalidArgument` naming `--base-url` otherwise.
struct LoopbackUrl {
  std::string host;  ///< as given
  int port = 80;     ///< from the URL
  /// \brief Parses `url`.
  static LoopbackUrl parse(const std::string& url);
};

/// \brief Sends requests to `nanoserve serve` (or nginx in front of replicas).
class HttpBackend : public Backend {
 public:
  /// \brief `model`: the id the server serves (empty: the first of its GET /v1/models).
  /// Throws `Error` when the server does not answer /v1/models.
  HttpBackend(const std::string& base_url, std::string model, double request_timeout_s);
  RequestOutcome run(const BenchRequest& r, Clock::time_point start,
                     Clock::time_point deadline) override;
  std::string name() const override { return "http"; }
  /// \brief The model id requests name.
  const std::string& model() const { return model_; }
  /// \brief GET `path` (e.g. /metrics); throws `Error` unless it answers 200.
  std::string get(const std::string& path) const;

 private:
  LoopbackUrl url_;
  std::string model_;
  double timeout_s_;
};

}  // namespace nanoserve::bench
