// Response objects, SSE framing and the Prometheus exposition of the server.
#include <gtest/gtest.h>

#include <string>

#include "apps/nanoserve/server/openai_response.h"
#include "apps/nanoserve/server/server_metrics.h"

namespace nanoserve::server {
namespace {

using nlohmann::json;

TEST(Ch08OpenAiResponse, SseEventsAreDataLinesEndedByABlankLine) {
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(std::string(sse_done()), "data: [DONE]\n\n");
  // A byte token may end mid-character: still valid JSON (U+FFFD), never an exception.
  EXPECT_EQ(dump_json(json("a\xC3")), "\"a\xEF\xBF\xBD\"");
}

TEST(Ch08OpenAiResponse, CompletionChunkAndFullResponseHaveOpenAisShape) {
  const ResponseBuilder b(false, "cmpl-3", "m", 100);
  const std::vector<LogprobEntry> lp = {{"ab", -0.5f, {{"ab", -0.5f}, {"c", -1.0f}}},
                                        {"d", -0.25f, {}}};
  const json c = b.chunk(0, "abd", &lp, 4, nullptr, true);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "abd");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(c["choices"][0]["logprobs"]["text_offset"], json({4, 6}));
  EXPECT_EQ(c["choices"][0]["logprobs"]["top_logprobs"][0]["c"], -1.0);
  const json u = b.usage_chunk({5, 7, 2});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 12);
  EXPECT_EQ(u["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  const json f = b.full({{"abd", {}, false, "length"}}, {5, 3, 0});
  EXPECT_EQ(f["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(f["choices"][0]["logprobs"].is_null());
}

TEST(Ch08OpenAiResponse, ChatChunksCarryTheRoleFirstAndChatLogprobs) {
  const ResponseBuilder b(true, "chatcmpl-1", "m", 100);
  const json first = b.chunk(0, "", nullptr, 0, nullptr, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  const json last = b.chunk(1, "", nullptr, 0, "stop", false);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["index"], 1);
  const std::vector<LogprobEntry> lp = {{"hi", -0.1f, {{"hi", -0.1f}}}};
  const json full = b.full({{"hi", lp, true, "stop"}}, {1, 1, 0});
  const json content = full["choices"][0]["logprobs"]["content"];
  EXPECT_EQ(content[0]["token"], "hi");
  EXPECT_EQ(content[0]["bytes"], json({104, 105}));
  EXPECT_EQ(content[0]["top_logprobs"][0]["token"], "hi");
  EXPECT_EQ(full["choices"][0]["message"]["content"], "hi");
}

TEST(Ch08ServerMetrics, PrometheusTextWithVllmStyleNamesAndHistograms) {
  ServerMetrics m;
  engine::Request r;
  r.arrival_s = 1.0;
  r.token_times_s = {1.05, 1.15, 1.35};
  r.finished_s = 1.35;
  r.finish_reason = engine::FinishReason::kStop;
  m.observe_finished(r);
  m.count_error(429);
  m.add_time(ServerPhase::kSerialize, 0.25);
  m.add_time(ServerPhase::kSerialize, 0.5);
  m.count_events(7);
  engine::EngineSnapshot s;
  s.step_seconds_total = 2.5;
  s.num_running = 3;
  s.num_kv_blocks = 10;
  s.kv.blocks_in_use = 4;
  const std::string text = m.prometheus(s);
  for (const char* line : {"nanoserve:num_requests_running 3\n",
                           "nanoserve:kv_cache_usage_perc 0.4\n",
                           "# TYPE nanoserve:time_to_first_token_seconds histogram\n",
                           "nanoserve:time_to_first_token_seconds_bucket{le=\"0.06\"} 1\n",
                           "nanoserve:time_to_first_token_seconds_bucket{le=\"0.04\"} 0\n",
                           "nanoserve:time_to_first_token_seconds_count 1\n",
                           "nanoserve:inter_token_latency_seconds_count 2\n",
                           "nanoserve:request_success_total{finished_reason=\"stop\"} 1\n",
                           "nanoserve:request_errors_total{code=\"429\"} 1\n",
                           "nanoserve:iteration_step_seconds_total 2.5\n",
                           "nanoserve:server_seconds_total{phase=\"serialize\"} 0.75\n",
                           "nanoserve:server_seconds_total{phase=\"write\"} 0\n",
                           "nanoserve:server_stream_events_total 7\n",
                           "# TYPE process_cpu_seconds_total counter\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

}  // namespace
}  // namespace nanoserve::server
