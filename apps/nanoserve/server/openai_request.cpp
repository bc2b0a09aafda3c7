#include "apps/nanoserve/server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "apps/nanoserve/server/api_error.h"

namespace nanoserve::server {

namespace {

using nlohmann::json;

// A field that is absent or null takes its default (as in the OpenAI API).
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::string type_name(const json& v) { return v.type_name(); }

double number(const json& body, const char* name, double fallback, double lo, double hi,
              bool open_lo = false) {
  const json* v = field(body, name);
  if (v == nullptr) return fallback;
  if (!v->is_number()) {
    throw bad_field(name, std::string("'") + name + "' must be a number, not " + type_name(*v));
  }
  const double x = v->get<double>();
  if (!(open_lo ? x > lo : x >= lo) || !(x <= hi)) {
    throw bad_field(name, std::string("'") + name + "' = " + v->dump() + " must be in " +
                              (open_lo ? "(" : "[") + json(lo).dump() + ", " + json(hi).dump() +
                              "]");
  }
  return x;
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) {
    throw bad_field(name, std::string("'") + name + "' must be an integer, not " +
                              (v->is_number() ? v->dump() : type_name(*v)));
  }
  const int64_t x = v->is_number_unsigned()
                        ? static_cast<int64_t>(std::min<uint64_t>(v->get<uint64_t>(),
                                                                   uint64_t(INT64_MAX)))
                        : v->get<int64_t>();
  if (x < lo || x > hi) {
    throw bad_field(name, std::string("'") + name + "' = " + v->dump() + " must be in [" +
                              std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return x;
}

bool boolean(const json& body, const char* name, bool fallback) {
  const json* v = field(body, name);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    throw bad_field(name, std::string("'") + name + "' must be a boolean, not " + type_name(*v));
  }
  return v->get<bool>();
}

// Fields of the API this server does not implement: refused when set to anything but their
// neutral value, never ignored silently.
void refuse_unsupported(const json& body) {
  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    if (number(body, name, 0, -2, 2) != 0) {
      throw bad_field(name, std::string("'") + name + "' is not supported by this server (use 0)");
    }
  }
  if (const json* v = field(body, "logit_bias"); v != nullptr && !v->empty()) {
    throw bad_field("logit_bias", "'logit_bias' is not supported by this server");
  }
  if (boolean(body, "echo", false)) {
    throw bad_field("echo", "'echo' is not supported by this server");
  }
  if (const json* v = field(body, "tools"); v != nullptr && !v->empty()) {
    throw bad_field("tools", "'tools' (function calling) is not supported by this server");
  }
  if (const json* v = field(body, "response_format");
      v != nullptr && !(v->is_object() && v->value("type", "text") == "text")) {
    throw bad_field("response_format", "only the 'text' response_format is supported");
  }
}

std::string message_content(const json& content, size_t i) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw bad_field(param, "'" + param + "' must be a string or an array of text parts");
  }
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      throw bad_field(param, "'" + param + "' may hold only {\"type\": \"text\", \"text\": …} "
                             "parts (this model reads text only)");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

std::vector<chat::ChatMessage> parse_messages(const json& body) {
  const json* v = field(body, "messages");
  if (v == nullptr) throw bad_field("messages", "'messages' is required");
  if (!v->is_array() || v->empty()) {
    throw bad_field("messages", "'messages' must be a non-empty array of messages");
  }
  std::vector<chat::ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      throw bad_field(param + ".role", "'" + param + "' must be an object with a string 'role'");
    }
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // the newer name of the system role
    if (role != "system" && role != "user" && role != "assistant") {
      throw bad_field(param + ".role", "'" + param + ".role' = '" + role +
                                           "' must be system, developer, user or assistant");
    }
    out.push_back({role, message_content(m.value("content", json(nullptr)), i)});
  }
  return out;
}

void parse_prompt(const json& body, CompletionRequest& r) {
  const json* v = field(body, "prompt");
  if (v == nullptr) throw bad_field("prompt", "'prompt' is required");
  const json* p = v;
  if (v->is_array() && v->size() == 1 && ((*v)[0].is_string() || (*v)[0].is_array())) {
    p = &(*v)[0];  // ["text"] or [[ids]]: one prompt
  }
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
    return;
  }
  if (p->is_array() && !p->empty() && std::all_of(p->begin(), p->end(), [](const json& t) {
        return t.is_number_integer();
      })) {
    for (const json& t : *p) {
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int>::max()) {
        throw bad_field("prompt", "'prompt' token id " + t.dump() + " is negative or too large");
      }
      r.prompt_ids.push_back(static_cast<int>(id));
    }
    return;
  }
  if (p->is_array() && p->size() > 1 && std::all_of(p->begin(), p->end(), [](const json& t) {
        return t.is_string() || t.is_array();
      })) {
    throw bad_field("prompt", "'prompt' holds " + std::to_string(p->size()) +
                                  " prompts; this server takes one prompt per request");
  }
  throw bad_field("prompt", "'prompt' must be a string, an array of one string, or an array "
                            "of token ids");
}

}  // namespace

CompletionRequest parse_completion_request(const json& body, bool chat,
                                           const RequestLimits& limits) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  CompletionRequest r;
  r.chat = chat;
  const json* model = field(body, "model");
  if (model == nullptr) throw bad_field("model", "'model' is required");
  if (!model->is_string()) throw bad_field("model", "'model' must be a string");
  r.model = model->get<std::string>();
  if (chat) {
    r.messages = parse_messages(body);
  } else {
    parse_prompt(body, r);
  }
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  r.max_tokens = integer(body, "max_tokens", 1, kMaxInt);
  if (auto m = integer(body, "max_completion_tokens", 1, kMaxInt)) r.max_tokens = m;
  r.temperature = static_cast<float>(number(body, "temperature", 1.0, 0, 2));
  r.top_p = static_cast<float>(number(body, "top_p", 1.0, 0, 1, /*open_lo=*/true));
  r.top_k = static_cast<int>(integer(body, "top_k", -1, kMaxInt).value_or(0));
  if (r.top_k < 0) r.top_k = 0;  // -1: off (vLLM)
  r.min_p = static_cast<float>(number(body, "min_p", 0.0, 0, 1));
  if (auto s = integer(body, "seed", std::numeric_limits<int64_t>::min(), INT64_MAX)) {
    r.seed = static_cast<uint64_t>(*s);
  }
  r.n = static_cast<int>(integer(body, "n", 1, limits.max_n).value_or(1));
  if (auto best_of = integer(body, "best_of", 1, limits.max_n); best_of && *best_of != r.n) {
    throw bad_field("best_of", "'best_of' other than n is not supported by this server");
  }
  if (const json* stop = field(body, "stop")) {
    if (stop->is_string()) {
      r.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && std::all_of(stop->begin(), stop->end(),
                                               [](const json& s) { return s.is_string(); })) {
      for (const json& s : *stop) r.stop.push_back(s.get<std::string>());
    } else {
      throw bad_field("stop", "'stop' must be a string or an array of strings");
    }
    if (static_cast<int>(r.stop.size()) > limits.max_stop) {
      throw bad_field("stop", "'stop' has " + std::to_string(r.stop.size()) +
                                  " strings; at most " + std::to_string(limits.max_stop));
    }
    for (const std::string& s : r.stop) {
      if (s.empty()) throw bad_field("stop", "'stop' holds an empty string");
    }
  }
  if (chat) {
    const bool want = boolean(body, "logprobs", false);
    const auto top = integer(body, "top_logprobs", 0, limits.max_logprobs);
    if (top && !want) {
      throw bad_field("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
    if (want) r.logprobs = static_cast<int>(top.value_or(0));
  } else {
    if (const json* v = field(body, "logprobs"); v != nullptr && v->is_boolean()) {
      throw bad_field("logprobs", "'logprobs' of /v1/completions is an integer in [0, 5]");
    }
    r.logprobs = static_cast<int>(integer(body, "logprobs", 0, 5).value_or(-1));
  }
  r.stream = boolean(body, "stream", false);
  if (const json* o = field(body, "stream_options")) {
    if (!o->is_object()) throw bad_field("stream_options", "'stream_options' must be an object");
    if (!r.stream) {
      throw bad_field("stream_options", "'stream_options' is only allowed when 'stream' is true");
    }
    r.include_usage = boolean(*o, "include_usage", false);
  }
  r.ignore_eos = boolean(body, "ignore_eos", false);
  refuse_unsupported(body);
  return r;
}

CompletionRequest parse_completion_body(const std::string& body, bool chat,
                                        const RequestLimits& limits) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    throw ApiError(400, "the request body is not valid JSON");
  }
  return parse_completion_request(parsed, chat, limits);
}

}  // namespace nanoserve::server
