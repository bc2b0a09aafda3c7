#include "apps/bench_serving/http_backend.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace nanoserve::bench {

using nlohmann::json;

LoopbackUrl LoopbackUrl::parse(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    throw InvalidArgument("--base-url '" + url + "' must start with http://");
  }
  std::string rest = url.substr(scheme.size());
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    if (rest.substr(slash) != "/") {
      throw InvalidArgument("--base-url '" + url + "' must be http://HOST:PORT (no path)");
    }
    rest = rest.substr(0, slash);
  }
  LoopbackUrl u;
  const size_t colon = rest.rfind(':');
  const bool bracketed = !rest.empty() && rest[0] == '[';
  if (colon != std::string::npos && (!bracketed || rest[colon - 1] == ']')) {
    u.host = rest.substr(0, colon);
    const std::string port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) < 1 || std::stoi(port) > 65535) {
      throw InvalidArgument("--base-url '" + url + "': port '" + port + "' must be in [1, 65535]");
    }
    u.port = std::stoi(port);
  } else {
    u.host = rest;
  }
  if (bracketed) u.host = u.host.substr(1, u.host.size() - 2);
  const bool loopback = u.host == "localhost" || u.host == "::1" ||
                        (u.host.rfind("127.", 0) == 0 &&
                         u.host.find_first_not_of("0123456789.") == std::string::npos);
  if (!loopback) {
    throw InvalidArgument("--base-url '" + url + "': host '" + u.host +
                          "' is not loopback (127.x.x.x, localhost, ::1); bench_serving only "
                          "loads servers on this machine");
  }
  return u;
}

HttpBackend::HttpBackend(const std::string& base_url, std::string model, double request_timeout_s)
    : url_(LoopbackUrl::parse(base_url)), model_(std::move(model)), timeout_s_(request_timeout_s) {
  if (model_.empty()) {
    const json models = json::parse(get("/v1/models"), nullptr, false);
    if (!models.is_object() || !models.contains("data") || models["data"].empty() ||
        !models["data"][0].contains("id")) {
      throw Error(base_url + "/v1/models did not list a model");
    }
    model_ = models["data"][0]["id"].get<std::string>();
  }
}

std::string HttpBackend::get(const std::string& path) const {
  httplib::Client c(url_.host, url_.port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(30, 0);
  auto res = c.Get(path.c_str());
  if (!res) {
    throw Error("GET http://" + url_.host + ":" + std::to_string(url_.port) + path + ": " +
                httplib::to_string(res.error()));
  }
  if (res->status != 200) {
    throw Error("GET " + path + ": HTTP " + std::to_string(res->status) + " " + res->body);
  }
  return res->body;
}

namespace {

// Reads server-sent events as they arrive: every complete "data: …\n\n" event.
struct SseReader {
  SseReader(RequestOutcome& o, Clock::time_point t) : out(o), start(t) {}
  RequestOutcome& out;
  Clock::time_point start;
  std::string buffer;
  bool done = false;

  void feed(const char* data, size_t n) {
    buffer.append(data, n);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      event(buffer.substr(0, end));
      buffer.erase(0, end + 2);
    }
  }
  void event(const std::string& e) {
    if (e.rfind("data: ", 0) != 0) return;  // comments, other fields
    const std::string data = e.substr(6);
    if (data == "[DONE]") {
      done = true;
      return;
    }
    const json chunk = json::parse(data, nullptr, false);
    if (!chunk.is_object()) {
      out.error = "a chunk is not JSON: " + data.substr(0, 200);
      return;
    }
    if (chunk.contains("error")) {
      out.error = "error event: " + chunk["error"].value("message", chunk["error"].dump());
      return;
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) {
      out.output_tokens = chunk["usage"].value("completion_tokens", 0);
      out.prompt_tokens = chunk["usage"].value("prompt_tokens", 0);
    }
    for (const json& c : chunk.value("choices", json::array())) {
      if (c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty()) {
        out.chunk_s.push_back(seconds_since(start));
      }
    }
  }
};

}  // namespace

RequestOutcome HttpBackend::run(const BenchRequest& r, Clock::time_point start,
                                Clock::time_point deadline) {
  RequestOutcome out;
  out.sent = true;
  out.prompt_tokens = static_cast<int>(r.prompt.size());
  const json body = {{"model", model_},
                     {"prompt", r.prompt},
                     {"max_tokens", r.max_tokens},
                     {"temperature", r.temperature},
                     {"seed", static_cast<int64_t>(r.seed)},  // the server reads it back as u64
                     {"ignore_eos", r.ignore_eos},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  httplib::Client c(url_.host, url_.port);
  c.set_connection_timeout(5, 0);
  const auto read_s = static_cast<time_t>(timeout_s_);
  c.set_read_timeout(read_s, static_cast<time_t>((timeout_s_ - double(read_s)) * 1e6));
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
  req.body = body.dump();
  int status = 0;
  std::string error_body;
  SseReader sse(out, start);
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, std::min<size_t>(n, 1000));
    } else {
      sse.feed(data, n);
    }
    if (Clock::now() < deadline) return true;
    out.incomplete = true;  // the run's duration bound: cut it (the server cancels it)
    return false;
  };
  out.send_s = seconds_since(start);
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool ok = c.send(req, res, err);
  out.end_s = seconds_since(start);
  if (out.incomplete) {
    out.error = "cut by --max-duration";
  } else if (!ok) {
    out.error = "HTTP client: " + httplib::to_string(err);
  } else if (status != 200) {
    out.error = "HTTP " + std::to_string(status) + ": " + error_body;
  } else if (out.error.empty() && !sse.done) {
    out.error = "the stream ended without [DONE]";
  }
  out.ok = out.error.empty();
  return out;
}

}  // namespace nanoserve::bench
