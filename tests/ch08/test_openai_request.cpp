// The request parser of the server (apps/nanoserve/server/openai_request.h): what OpenAI's
// API accepts is accepted, unknown fields are ignored, and every wrong type or value is a
// 400 naming the field.
#include <gtest/gtest.h>

#include <string>

#include "apps/nanoserve/server/api_error.h"
#include "apps/nanoserve/server/openai_request.h"

namespace nanoserve::server {
namespace {

using nlohmann::json;

// The `param` of the 400 that `body` gets (the test fails if it is accepted).
std::string refused_param(const json& body, bool chat = false) {
  try {
    parse_completion_request(body, chat);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << e.what();
    const json err = e.to_json()["error"];
    EXPECT_EQ(err["type"], "invalid_request_error");
    EXPECT_FALSE(std::string(e.what()).empty());
    return err["param"].is_null() ? "(none)" : err["param"].get<std::string>();
  }
  ADD_FAILURE() << "accepted: " << body.dump();
  return "";
}

TEST(Ch08OpenAiRequest, ReadsEveryFieldClientsSend) {
  const json body = {{"model", "m"}, {"prompt", "Once"}, {"max_tokens", 7}, {"temperature", 0.5},
                     {"top_p", 0.9}, {"top_k", 40}, {"min_p", 0.05}, {"seed", 3}, {"n", 2},
                     {"stop", {"\n", "END"}}, {"logprobs", 2}, {"stream", true},
                     {"stream_options", {{"include_usage", true}}}, {"user", "ignored"},
                     {"ignore_eos", true},
                     {"some_future_field", {1, 2}}};
  const CompletionRequest r = parse_completion_request(body, false);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.top_p, 0.9f);
  EXPECT_EQ(r.top_k, 40);
  EXPECT_FLOAT_EQ(r.min_p, 0.05f);
  EXPECT_EQ(*r.seed, 3u);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_FALSE(parse_completion_request({{"model", "m"}, {"prompt", "p"}}, false).ignore_eos);
}

TEST(Ch08OpenAiRequest, ChatReadsMessagesPartsAndTopLogprobs) {
  const json body = {
      {"model", "m"},
      {"messages", {{{"role", "developer"}, {"content", "Be brief."}},
                    {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Hi "}},
                                                    {{"type", "text"}, {"text", "there"}}}}},
                    {{"role", "assistant"}, {"content", nullptr}}}},
      {"max_completion_tokens", 9}, {"max_tokens", 3}, {"logprobs", true}, {"top_logprobs", 4},
      {"stop", "x"}, {"temperature", nullptr}};
  const CompletionRequest r = parse_completion_request(body, true);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hi there");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(*r.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_EQ(r.logprobs, 4);
  EXPECT_FLOAT_EQ(r.temperature, 1.0f);  // null: the default
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
}

TEST(Ch08OpenAiRequest, PromptAsTokenIdsOrOneStringInAnArray) {
  EXPECT_EQ(parse_completion_request({{"model", "m"}, {"prompt", {1, 5, 9}}}, false).prompt_ids,
            (std::vector<int>{1, 5, 9}));
  EXPECT_EQ(parse_completion_request({{"model", "m"}, {"prompt", {"text"}}}, false).prompt, "text");
}

TEST(Ch08OpenAiRequest, WrongTypesAndValuesNameTheField) {
  const json ok = {{"model", "m"}, {"prompt", "p"}};
  auto with = [&](const char* k, json v) {
    json b = ok;
    b[k] = std::move(v);
    return b;
  };
  EXPECT_EQ(refused_param({{"prompt", "p"}}), "model");
  EXPECT_EQ(refused_param({{"model", 3}, {"prompt", "p"}}), "model");
  EXPECT_EQ(refused_param({{"model", "m"}}), "prompt");
  EXPECT_EQ(refused_param(with("prompt", {"a", "b"})), "prompt");  // two prompts
  EXPECT_EQ(refused_param(with("prompt", {1, -2})), "prompt");
  EXPECT_EQ(refused_param(with("max_tokens", 0)), "max_tokens");
  EXPECT_EQ(refused_param(with("max_tokens", 2.5)), "max_tokens");
  EXPECT_EQ(refused_param(with("max_tokens", "8")), "max_tokens");
  EXPECT_EQ(refused_param(with("temperature", "hot")), "temperature");
  EXPECT_EQ(refused_param(with("temperature", 2.5)), "temperature");
  EXPECT_EQ(refused_param(with("top_p", 0)), "top_p");
  EXPECT_EQ(refused_param(with("top_p", 1.5)), "top_p");
  EXPECT_EQ(refused_param(with("min_p", -0.1)), "min_p");
  EXPECT_EQ(refused_param(with("top_k", -2)), "top_k");
  EXPECT_EQ(refused_param(with("n", 0)), "n");
  EXPECT_EQ(refused_param(with("n", 17)), "n");
  EXPECT_EQ(refused_param(with("seed", "x")), "seed");
  EXPECT_EQ(refused_param(with("stop", 5)), "stop");
  EXPECT_EQ(refused_param(with("stop", {"a", ""})), "stop");
  EXPECT_EQ(refused_param(with("stop", {"a", "b", "c", "d", "e"})), "stop");
  EXPECT_EQ(refused_param(with("logprobs", 6)), "logprobs");
  EXPECT_EQ(refused_param(with("logprobs", true)), "logprobs");  // chat's form
  EXPECT_EQ(refused_param(with("stream", "yes")), "stream");
  EXPECT_EQ(refused_param(with("ignore_eos", 1)), "ignore_eos");
  EXPECT_EQ(refused_param(with("stream_options", {{"include_usage", true}})), "stream_options");
  EXPECT_EQ(refused_param(with("frequency_penalty", 0.5)), "frequency_penalty");
  EXPECT_EQ(refused_param(with("logit_bias", {{"5", 10}})), "logit_bias");
  EXPECT_EQ(refused_param(with("echo", true)), "echo");
  EXPECT_EQ(refused_param(with("best_of", 3)), "best_of");
  EXPECT_EQ(refused_param(json::array()), "(none)");
}

TEST(Ch08OpenAiRequest, ChatRefusalsNameTheMessage) {
  auto chat = [](json messages) { return json{{"model", "m"}, {"messages", messages}}; };
  EXPECT_EQ(refused_param({{"model", "m"}}, true), "messages");
  EXPECT_EQ(refused_param(chat(json::array()), true), "messages");
  EXPECT_EQ(refused_param(chat({{{"role", "robot"}, {"content", "x"}}}), true),
            "messages[0].role");
  EXPECT_EQ(refused_param(chat({{{"role", "user"}, {"content", 5}}}), true),
            "messages[0].content");
  EXPECT_EQ(refused_param(chat({{{"role", "user"},
                                 {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}),
                          true),
            "messages[0].content");
  json top = chat({{{"role", "user"}, {"content", "x"}}});
  top["top_logprobs"] = 2;  // without logprobs: true
  EXPECT_EQ(refused_param(top, true), "top_logprobs");
  top["logprobs"] = true;
  top["top_logprobs"] = 21;
  EXPECT_EQ(refused_param(top, true), "top_logprobs");
}

TEST(Ch08OpenAiRequest, BodyThatIsNotJsonIsA400) {
  try {
    parse_completion_body("{\"model\": ", false);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
}

}  // namespace
}  // namespace nanoserve::server
