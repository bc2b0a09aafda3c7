#pragma once
/// \file
/// \brief The body of `POST /v1/completions` and `POST /v1/chat/completions`, read and checked
/// the way the OpenAI API does: unknown fields are ignored, a known field of the wrong type or
/// out of range is a 400 naming it (`ApiError`, `param` set).
///
///     {"model": "stories260K", "prompt": "Once upon", "max_tokens": 16, "temperature": 0,
///      "stop": ["\n"], "logprobs": 2, "stream": true, "stream_options": {"include_usage": true}}
///     {"model": "…", "messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 3,
///      "logprobs": true, "max_completion_tokens": 32, "n": 2, "seed": 7}

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/chat/chat_template.h"

namespace nanoserve::server {

/// \brief What the server accepts beyond the API's own ranges.
struct RequestLimits {
  int max_n = 16;         ///< most choices per request (`n`)
  int max_logprobs = 20;  ///< most `top_logprobs` (completions' `logprobs` is at most 5)
  int max_stop = 4;       ///< most stop strings, as OpenAI
};

/// \brief A completion request, checked. Tokenization and context checks come later (they
/// need the model).
struct CompletionRequest {
  bool chat = false;                        ///< /v1/chat/completions
  std::string model;                        ///< the `model` field (required)
  std::string prompt;                       ///< completions: the prompt text
  std::vector<int> prompt_ids;              ///< completions: a prompt given as token ids
  std::vector<chat::ChatMessage> messages;  ///< chat: the conversation
  std::optional<int> max_tokens;            ///< `max_tokens` / `max_completion_tokens`
  float temperature = 1.0f;                 ///< [0, 2]
  float top_p = 1.0f;                       ///< (0, 1]
  int top_k = 0;                            ///< 0 or -1: off
  float min_p = 0.0f;                       ///< [0, 1]
  std::optional<uint64_t> seed;             ///< the RNG seed (the server picks one when unset)
  int n = 1;                                ///< choices
  std::vector<std::string> stop;            ///< stop strings (cut from the text)
  /// \brief Log-probabilities per token: -1 none; k >= 0 the token's and the k most likely
  /// (completions: `logprobs: k`; chat: `logprobs: true` with `top_logprobs: k`).
  int logprobs = -1;
  bool stream = false;         ///< server-sent events
  bool include_usage = false;  ///< `stream_options.include_usage`: a last chunk with usage
  /// \brief vLLM's extension `ignore_eos`: EOS (and the other stop tokens) do not end the
  /// text, so it runs to `max_tokens` — what benchmarks use for fixed output lengths. Stop
  /// strings still apply.
  bool ignore_eos = false;
};

/// \brief Checks `body` (a parsed JSON object) as a completion (`chat` false) or chat
/// completion request. Throws `ApiError` 400 naming the field for a missing required field,
/// a wrong type or a value out of range.
CompletionRequest parse_completion_request(const nlohmann::json& body, bool chat,
                                           const RequestLimits& limits = {});

/// \brief Parses the raw HTTP body; a body that is not a JSON object is a 400.
CompletionRequest parse_completion_body(const std::string& body, bool chat,
                                        const RequestLimits& limits = {});

}  // namespace nanoserve::server
