#include "apps/nanoserve/server/openai_response.h"

namespace nanoserve::server {

using nlohmann::json;

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& data) { return "data: " + dump_json(data) + "\n\n"; }

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json ResponseBuilder::envelope(const char* object) const {
  return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
}

namespace {
json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}
}  // namespace

json ResponseBuilder::logprobs_json(const std::vector<LogprobEntry>& lp, size_t offset) const {
  if (chat_) {
    json content = json::array();
    for (const LogprobEntry& e : lp) {
      json top = json::array();
      for (const auto& [text, logprob] : e.top) {
        top.push_back({{"token", text}, {"logprob", logprob}, {"bytes", bytes_of(text)}});
      }
      content.push_back({{"token", e.token},
                         {"logprob", e.logprob},
                         {"bytes", bytes_of(e.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       text_offset = json::array();
  for (const LogprobEntry& e : lp) {
    tokens.push_back(e.token);
    token_logprobs.push_back(e.logprob);
    json alternatives = json::object();
    for (const auto& [text, logprob] : e.top) alternatives[text] = logprob;
    top.push_back(alternatives);
    text_offset.push_back(offset);
    offset += e.token.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", text_offset}};
}

json ResponseBuilder::chunk(int index, const std::string& text, const std::vector<LogprobEntry>* lp,
                            size_t text_offset, const char* finish_reason, bool with_role) const {
  json choice = {{"index", index},
                 {"logprobs", lp != nullptr ? logprobs_json(*lp, text_offset) : json(nullptr)},
                 {"finish_reason", finish_reason != nullptr ? json(finish_reason) : json(nullptr)}};
  if (chat_) {
    json delta = json::object();
    if (with_role) delta["role"] = "assistant";
    if (!text.empty() || with_role) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  json out = envelope(chat_ ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array({choice});
  return out;
}

json ResponseBuilder::usage_chunk(const Usage& usage) const {
  json out = envelope(chat_ ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

json ResponseBuilder::full(const std::vector<ChoiceResult>& choices, const Usage& usage) const {
  json out = envelope(chat_ ? "chat.completion" : "text_completion");
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json choice = {{"index", i},
                   {"logprobs", c.with_logprobs ? logprobs_json(c.logprobs, 0) : json(nullptr)},
                   {"finish_reason", c.finish_reason}};
    if (chat_) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    list.push_back(choice);
  }
  out["choices"] = list;
  out["usage"] = usage_json(usage);
  return out;
}

}  // namespace nanoserve::server
