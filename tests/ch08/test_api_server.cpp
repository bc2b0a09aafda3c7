// The HTTP server in-process (apps/nanoserve/server/api_server.h) over the fake model, talked
// to with cpp-httplib's client and a raw socket: status codes and error objects, streaming,
// and a client that disconnects mid-stream, whose request is cancelled and its blocks freed.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "apps/nanoserve/server/api_server.h"
#include "ch08/async_test_support.h"
#include "common/tokenizer/byte_tokenizer.h"

namespace nanoserve::server {
namespace {

using nlohmann::json;
constexpr int kVocab = 300;

// A server on a free loopback port over the slowed fake model; stopped by the destructor.
struct TestServer {
  explicit TestServer(int step_ms, int max_waiting = 64) : tok(kVocab) {
    config.max_num_seqs = 4;
    config.max_model_len = 96;
    config.num_kv_blocks = 64;
    config.block_size = 4;
    engine::AsyncEngineOptions ao;
    ao.max_waiting = max_waiting;
    engine = std::make_unique<engine::AsyncEngine>(
        config, std::make_unique<testing::SlowFakeExecutor>(config, kVocab, step_ms),
        [this](int p, int t) { return tok.decode_token(p, t); }, ao);
    ServerOptions o;
    o.model_name = "fake";
    o.max_model_len = config.max_model_len;
    o.num_kv_blocks = config.num_kv_blocks;
    o.block_size = config.block_size;
    o.max_body_bytes = 4096;
    o.max_tokens_ceiling = 64;
    ModelText text;
    text.tokenizer = &tok;
    text.completion_stop_ids = {2};
    server = std::make_unique<ApiServer>(o, *engine, std::move(text));
    port = server->bind("127.0.0.1", 0);
    thread = std::thread([this] { server->run(); });
  }
  ~TestServer() {
    server->shutdown(1.0);
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    return c;
  }
  ByteTokenizer tok;
  engine::SchedulerConfig config;
  std::unique_ptr<engine::AsyncEngine> engine;
  std::unique_ptr<ApiServer> server;
  int port = 0;
  std::thread thread;
};

json post(const TestServer& s, const char* path, const json& body, int* status,
          std::string* retry_after = nullptr) {
  httplib::Client c = s.client();
  auto res = c.Post(path, body.dump(), "application/json");
  if (!res) {
    *status = -1;
    return {};
  }
  *status = res->status;
  if (retry_after) *retry_after = res->get_header_value("Retry-After");
  return json::parse(res->body, nullptr, false);
}

TEST(Ch08ApiServer, CompletionModelsHealthAndErrors) {
  TestServer s(0);
  int status = 0;
  json r = post(s, "/v1/completions",
                {{"model", "fake"}, {"prompt", "hello"}, {"max_tokens", 5}, {"temperature", 0}},
                &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["usage"]["prompt_tokens"], 6);  // BOS + 5 bytes
  EXPECT_EQ(r["usage"]["completion_tokens"].get<int>() <= 5, true);
  EXPECT_TRUE(r["choices"][0]["finish_reason"] == "length" ||
              r["choices"][0]["finish_reason"] == "stop");

  r = post(s, "/v1/completions", {{"model", "other"}, {"prompt", "x"}}, &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(r["error"]["code"], "model_not_found");
  r = post(s, "/v1/completions", {{"model", "fake"}, {"prompt", std::string(120, 'x')}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["code"], "context_length_exceeded");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("121 tokens"), std::string::npos);
  r = post(s, "/v1/completions", {{"model", "fake"}, {"prompt", "x"}, {"max_tokens", 90}}, &status);
  EXPECT_EQ(status, 400);  // over the ceiling of 64
  EXPECT_EQ(r["error"]["param"], "max_tokens");
  r = post(s, "/v1/chat/completions",
           {{"model", "fake"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, &status);
  EXPECT_EQ(status, 400);  // no chat template
  r = post(s, "/v1/completions", {{"model", "fake"}, {"prompt", std::string(5000, 'x')}}, &status);
  EXPECT_EQ(status, 413);
  EXPECT_TRUE(r["error"].is_object());

  httplib::Client c = s.client();
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "fake");
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("nanoserve:request_errors_total{code=\"404\"} 1"), std::string::npos);
  auto missing = c.Get("/v2/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(json::parse(missing->body)["error"].is_object());
}

TEST(Ch08ApiServer, StreamEndsWithDoneAndTokensEqualTheNonStreamedOnes) {
  TestServer s(0);
  const json body = {{"model", "fake"}, {"prompt", "abc"}, {"max_tokens", 8}, {"seed", 5},
                     {"temperature", 0.7}};
  int status = 0;
  const json full = post(s, "/v1/completions", body, &status);
  ASSERT_EQ(status, 200);
  json streamed = body;
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  httplib::Client c = s.client();
  auto res = c.Post("/v1/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  const std::string& sse = res->body;
  ASSERT_GE(sse.size(), 14u);
  EXPECT_EQ(sse.substr(sse.size() - 14), "data: [DONE]\n\n");
  std::string text;
  json usage;
  for (size_t at = 0; (at = sse.find("data: {", at)) != std::string::npos; ++at) {
    const json chunk = json::parse(sse.substr(at + 6, sse.find("\n\n", at) - at - 6));
    if (chunk["choices"].empty()) usage = chunk["usage"];
    for (const json& ch : chunk["choices"]) text += ch["text"].get<std::string>();
  }
  EXPECT_EQ(text, full["choices"][0]["text"].get<std::string>());
  EXPECT_EQ(usage, full["usage"]);
  // The timer split saw the stream: its events were counted and its work timed.
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  auto value = [&](const std::string& name) {
    const size_t at = metrics->body.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(metrics->body.substr(at + name.size() + 2));
  };
  size_t events = 0;
  for (size_t at = 0; (at = sse.find("data: ", at)) != std::string::npos; ++at) ++events;
  EXPECT_EQ(value("nanoserve:server_stream_events_total"), double(events));
  for (const char* phase : {"request", "detokenize", "serialize", "write"}) {
    EXPECT_GT(value(std::string("nanoserve:server_seconds_total{phase=\"") + phase + "\"}"), 0)
        << phase;
  }
  EXPECT_GT(value("nanoserve:iteration_step_seconds_total"), 0);
  EXPECT_GT(value("nanoserve:engine_thread_cpu_seconds_total"), 0);
}

TEST(Ch08ApiServer, FullQueueIs429WithRetryAfter) {
  TestServer s(20, /*max_waiting=*/1);
  std::vector<std::thread> clients;
  std::atomic<int> ok{0}, refused{0};
  std::string retry_after;
  std::mutex mu;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&] {
      int status = 0;
      std::string ra;
      const json r = post(s, "/v1/completions",
                          {{"model", "fake"}, {"prompt", "x"}, {"max_tokens", 6}}, &status, &ra);
      if (status == 200) ++ok;
      if (status == 429) {
        ++refused;
        std::lock_guard<std::mutex> lock(mu);
        retry_after = ra;
        EXPECT_EQ(r["error"]["code"], "queue_full");
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_GE(ok.load(), 1);
  EXPECT_GE(refused.load(), 1);
  EXPECT_EQ(ok + refused, 8);
  EXPECT_EQ(retry_after, "1");
}

// A client that reads part of a stream and closes its socket: the server notices at its next
// write, cancels the request, and the engine frees its blocks.
TEST(Ch08ApiServer, ClientDisconnectMidStreamCancelsAndFreesBlocks) {
  TestServer s(10);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(s.port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string body = json({{"model", "fake"}, {"prompt", "a long story"},
                                 {"max_tokens", 60}, {"temperature", 0}, {"stream", true}})
                               .dump();
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                              "application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(send(fd, request.data(), request.size(), 0), ssize_t(request.size()));
  std::string got;
  char buf[4096];
  while (got.find("data: {") == std::string::npos) {  // the first chunk: it is running
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got.append(buf, size_t(n));
  }
  EXPECT_GT(s.engine->snapshot().kv.blocks_in_use, 0);
  close(fd);
  engine::EngineSnapshot snap;
  for (int i = 0; i < 200; ++i) {  // at most 2 s
    snap = s.engine->snapshot();
    if (snap.stats.num_cancelled == 1 && snap.kv.blocks_in_use == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(snap.stats.num_cancelled, 1);
  EXPECT_EQ(snap.kv.blocks_in_use, 0);
  EXPECT_LT(snap.num_generated_tokens, 60);
}

}  // namespace
}  // namespace nanoserve::server
