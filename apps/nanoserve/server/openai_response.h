#pragma once
/// \file
/// \brief The OpenAI API's response objects and their server-sent-event framing:
///
///     non-streaming   {"id": "cmpl-7", "object": "text_completion", "created": …, "model": …,
///                      "choices": [{"index": 0, "text": …, "logprobs": …,
///                                   "finish_reason": "stop"}],
///                      "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}
///     streaming       data: {…"object": "text_completion", "choices": [{"index": 0, "text": "Once",
///                            "finish_reason": null}]}\n\n
///                     …  (the last chunk of each choice carries its finish_reason)
///                     data: {…"choices": [], "usage": {…}}\n\n   (stream_options.include_usage)
///                     data: [DONE]\n\n
///
/// Chat responses are the same with "chat.completion" / "chat.completion.chunk", a `message`
/// (or a `delta`, whose first chunk carries the role) instead of `text`, and the chat form of
/// `logprobs` (`content`: token, logprob, bytes, top_logprobs).

#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace nanoserve::server {

/// \brief One token's log-probability with its text and the most likely alternatives.
struct LogprobEntry {
  std::string token;  ///< the token's text
  float logprob = 0;  ///< its log-probability
  std::vector<std::pair<std::string, float>> top;  ///< alternatives' texts, most likely first
};

/// \brief Token counts of a request (all its choices).
struct Usage {
  int prompt_tokens = 0;      ///< prompt tokens (once, whatever n)
  int completion_tokens = 0;  ///< generated tokens over all choices
  int cached_tokens = 0;      ///< prompt tokens whose KV came from the prefix cache
};

/// \brief A finished choice of a non-streaming response.
struct ChoiceResult {
  std::string text;                   ///< the answer (stop string removed)
  std::vector<LogprobEntry> logprobs;  ///< one per generated token when asked
  bool with_logprobs = false;         ///< whether `logprobs` was asked for
  std::string finish_reason;          ///< "stop" or "length"
};

/// \brief Builds a request's response objects (one id, creation time and model name).
class ResponseBuilder {
 public:
  /// \brief `chat` selects the chat objects; `id` e.g. "cmpl-7" or "chatcmpl-7".
  ResponseBuilder(bool chat, std::string id, std::string model, std::time_t created)
      : chat_(chat), id_(std::move(id)), model_(std::move(model)), created_(created) {}

  /// \brief A streaming chunk of choice `index`: new `text`, its tokens' log-probabilities
  /// (null: not asked), `text_offset` (completions: where `text` starts in the choice), the
  /// finish reason on the last chunk (null otherwise), and (chat) the role on the first.
  nlohmann::json chunk(int index, const std::string& text, const std::vector<LogprobEntry>* lp,
                       size_t text_offset, const char* finish_reason, bool with_role) const;
  /// \brief The last chunk of a stream with `stream_options.include_usage`: no choices.
  nlohmann::json usage_chunk(const Usage& usage) const;
  /// \brief The whole non-streaming response.
  nlohmann::json full(const std::vector<ChoiceResult>& choices, const Usage& usage) const;

 private:
  nlohmann::json envelope(const char* object) const;
  nlohmann::json logprobs_json(const std::vector<LogprobEntry>& lp, size_t text_offset) const;

  bool chat_;
  std::string id_, model_;
  std::time_t created_;
};

/// \brief The usage object: prompt, completion and total tokens (and cached prompt tokens).
nlohmann::json usage_json(const Usage& usage);
/// \brief One server-sent event carrying `data` ("data: {…}\n\n"); invalid UTF-8 is replaced.
std::string sse_event(const nlohmann::json& data);
/// \brief The stream's end marker, "data: [DONE]\n\n".
inline const char* sse_done() { return "data: [DONE]\n\n"; }
/// \brief `j` as text with invalid UTF-8 replaced by U+FFFD (a byte token may split a
/// character; the client still gets valid JSON).
std::string dump_json(const nlohmann::json& j);

}  // namespace nanoserve::server
