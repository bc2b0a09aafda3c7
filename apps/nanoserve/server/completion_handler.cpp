// POST /v1/completions and /v1/chat/completions: a checked request becomes an engine request;
// its streams become SSE chunks (stream: true) or one JSON response.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "apps/nanoserve/server/api_server.h"
#include "apps/nanoserve/server/openai_response.h"
#include "apps/nanoserve/server/text_stream.h"
#include "common/chat/jinja.h"

namespace nanoserve::server {

namespace {

using engine::FinishReason;
using engine::RequestStream;
using engine::StreamDelta;
using Clock = std::chrono::steady_clock;

// Seconds since `t` (the server's timer split, ServerPhase).
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

const char* finish_reason_name(FinishReason r) {
  return r == FinishReason::kStop ? "stop" : "length";
}

// A finish that is not an answer: the request was cancelled by the server (drain deadline,
// engine failure) or could not run.
bool failed(const StreamDelta& d) {
  return d.finish_reason == FinishReason::kCancelled || d.finish_reason == FinishReason::kRejected;
}

ApiError failure_error(const StreamDelta& d) {
  if (d.finish_reason == FinishReason::kRejected) {
    return ApiError(400, "the request cannot run: " + d.finish_detail, "invalid_request_error");
  }
  return ApiError(503, "the request was cancelled: " + d.finish_detail, "server_error", "",
                  "server_shutting_down", 1);
}

// One choice of a request as it is produced: its stream, its safe text, its logprobs.
struct Choice {
  Choice(std::shared_ptr<RequestStream> s, TextStream t, int prev)
      : stream(std::move(s)), text(std::move(t)), prev_token(prev) {}
  std::shared_ptr<RequestStream> stream;
  TextStream text;
  int prev_token;                    // for the text of logprob tokens
  std::vector<LogprobEntry> pending;  // logprobs of tokens whose text is not sent yet
  std::vector<LogprobEntry> all;      // non-streaming: every token's
  size_t offset = 0;                  // text sent so far (completions' text_offset)
  int num_tokens = 0;
  bool finished = false;
  bool role_sent = false;
  StreamDelta end;
};

// Everything one request's handler keeps between writes.
struct Job {
  Job(engine::AsyncEngine& e, ResponseBuilder b, ServerMetrics& m)
      : engine(e), builder(std::move(b)), metrics(m) {}
  engine::AsyncEngine& engine;
  ResponseBuilder builder;
  ServerMetrics& metrics;  // the timer split: detokenize and serialize here, write by the caller
  std::vector<Choice> choices;
  const Tokenizer* tok = nullptr;
  int logprobs = -1;
  bool include_usage = false;
  Usage usage;
  bool done = false;
  uint64_t num_events = 0;  // SSE events made

  void cancel_unfinished() {
    for (Choice& c : choices) {
      if (!c.finished) engine.cancel(c.stream->id());
    }
  }

  // Takes what the engine produced for choice i; returns the text that may be sent now.
  std::string absorb(Choice& c, const StreamDelta& d) {
    std::string out;
    for (size_t k = 0; k < d.tokens.size(); ++k) {
      const int t = d.tokens[k];
      out += c.text.push(t);
      if (logprobs >= 0 && k < d.logprobs.size()) {
        LogprobEntry e;
        e.token = tok->decode_token(c.prev_token, t);
        e.logprob = d.logprobs[k].logprob;
        for (const auto& [id, lp] : d.logprobs[k].top) {
          e.top.emplace_back(tok->decode_token(c.prev_token, id), lp);
        }
        c.pending.push_back(e);
      }
      c.prev_token = t;
    }
    c.num_tokens += static_cast<int>(d.tokens.size());
    if (d.finished) {
      out += c.text.finish();
      c.finished = true;
      c.end = d;
      usage.completion_tokens += c.num_tokens;
      usage.cached_tokens = std::max(usage.cached_tokens, d.num_prefix_hit_tokens);
    }
    return out;
  }

  // Waits (briefly) for news of any unfinished choice; returns the SSE text to write.
  std::string next_events(std::chrono::milliseconds wait) {
    std::string events;
    bool waited = false;
    for (size_t i = 0; i < choices.size(); ++i) {
      Choice& c = choices[i];
      if (c.finished) continue;
      StreamDelta d;
      if (!c.stream->next(d, waited ? std::chrono::milliseconds(0) : wait)) {
        waited = true;
        continue;
      }
      waited = true;
      Clock::time_point t = Clock::now();
      const std::string text = absorb(c, d);
      metrics.add_time(ServerPhase::kDetokenize, since(t));
      t = Clock::now();
      if (c.finished && failed(c.end)) {
        // Never a silent truncation: the client's SDK raises this error.
        events += sse_event(failure_error(c.end).to_json());
        cancel_unfinished();
        done = true;
        num_events += 2;
        return events + sse_done();
      }
      const char* finish = c.finished ? finish_reason_name(c.end.finish_reason) : nullptr;
      if (text.empty() && finish == nullptr && !(builder_is_chat() && !c.role_sent)) continue;
      events += sse_event(builder.chunk(static_cast<int>(i), text,
                                        logprobs >= 0 ? &c.pending : nullptr, c.offset, finish,
                                        !c.role_sent));
      metrics.add_time(ServerPhase::kSerialize, since(t));
      ++num_events;
      c.role_sent = true;
      c.offset += text.size();
      c.pending.clear();
    }
    if (std::all_of(choices.begin(), choices.end(), [](const Choice& c) { return c.finished; })) {
      const Clock::time_point t = Clock::now();
      if (include_usage) events += sse_event(builder.usage_chunk(usage));
      events += sse_done();
      metrics.add_time(ServerPhase::kSerialize, since(t));
      num_events += include_usage ? 2 : 1;
      done = true;
    }
    return events;
  }
  bool chat = false;
  bool builder_is_chat() const { return chat; }
};

}  // namespace

engine::Request ApiServer::build_request(const CompletionRequest& c) {
  const Tokenizer& tok = *text_.tokenizer;
  std::vector<int> ids;
  if (c.chat) {
    if (!text_.chat_template) {
      throw ApiError(400, "model '" + options_.model_name + "' has no chat template; use "
                     "/v1/completions, or start the server with --chat-template FILE");
    }
    std::string prompt;
    try {
      prompt = text_.chat_template->render(c.messages, /*add_generation_prompt=*/true);
    } catch (const std::exception& e) {
      throw bad_field("messages", std::string("the chat template refused the messages: ") +
                                      e.what());
    }
    ids = tok.encode(prompt, /*add_bos=*/!text_.template_writes_bos, false);
  } else if (!c.prompt_ids.empty()) {
    ids = c.prompt_ids;
    for (int id : ids) {
      if (id >= tok.vocab_size()) {
        throw bad_field("prompt", "'prompt' token id " + std::to_string(id) +
                                      " is outside the vocabulary of " +
                                      std::to_string(tok.vocab_size()));
      }
    }
  } else {
    ids = tok.encode(c.prompt, /*add_bos=*/true, false);
  }
  const int prompt_len = static_cast<int>(ids.size());
  const int context = options_.max_model_len;
  const char* prompt_param = c.chat ? "messages" : "prompt";
  if (prompt_len >= context) {
    throw ApiError(400, "This model's maximum context length is " + std::to_string(context) +
                   " tokens. However, your prompt has " + std::to_string(prompt_len) +
                   " tokens (no room for the completion).", "invalid_request_error",
                   prompt_param, "context_length_exceeded");
  }
  int max_tokens;
  if (c.max_tokens) {
    max_tokens = *c.max_tokens;
    if (max_tokens > options_.max_tokens_ceiling) {
      throw bad_field(c.chat ? "max_completion_tokens" : "max_tokens",
                      "max_tokens = " + std::to_string(max_tokens) + " exceeds this server's " +
                      "ceiling of " + std::to_string(options_.max_tokens_ceiling) +
                      " (--max-tokens-ceiling)");
    }
    if (prompt_len + max_tokens > context) {
      throw ApiError(400, "This model's maximum context length is " + std::to_string(context) +
                     " tokens. However, you requested " + std::to_string(prompt_len + max_tokens) +
                     " tokens (" + std::to_string(prompt_len) + " in the " + prompt_param +
                     ", " + std::to_string(max_tokens) + " in the completion).",
                     "invalid_request_error", prompt_param, "context_length_exceeded");
    }
  } else {  // OpenAI's defaults: 16 for completions, the rest of the context for chat
    max_tokens = std::min({c.chat ? context - prompt_len : 16, options_.max_tokens_ceiling,
                           context - prompt_len});
  }
  // The engine rejects a prompt whose KV needs more blocks than the whole pool: say so now,
  // before a stream has started.
  const int blocks = (prompt_len + options_.block_size) / options_.block_size;
  if (options_.num_kv_blocks > 0 && blocks > options_.num_kv_blocks) {
    throw ApiError(400, "the prompt's " + std::to_string(prompt_len) + " tokens need " +
                   std::to_string(blocks) + " KV blocks; the pool has " +
                   std::to_string(options_.num_kv_blocks), "invalid_request_error",
                   prompt_param, "context_length_exceeded");
  }
  SamplingParams sampling;
  sampling.temperature = c.temperature;
  sampling.top_p = c.top_p;
  sampling.top_k = c.top_k;
  sampling.min_p = c.min_p;
  sampling.seed = c.seed ? *c.seed : next_seed_.fetch_add(uint64_t(options_.limits.max_n));
  engine::Request r = engine::make_request(0, std::move(ids), max_tokens, sampling);
  if (!c.ignore_eos) r.stop_token_ids = c.chat ? text_.chat_stop_ids : text_.completion_stop_ids;
  r.stop_strings = c.stop;
  r.num_logprobs = c.logprobs;
  return r;
}

void ApiServer::handle_completion(const httplib::Request& req, httplib::Response& res, bool chat) {
  const Clock::time_point t_start = Clock::now();
  std::vector<std::shared_ptr<RequestStream>> streams;
  engine::Request request;
  CompletionRequest c;
  try {
    if (draining_) {
      throw ApiError(503, "the server is shutting down", "server_error", "",
                     "server_shutting_down", options_.retry_after_s);
    }
    c = parse_completion_body(req.body, chat, options_.limits);
    if (c.model != options_.model_name) {
      throw ApiError(404, "The model '" + c.model + "' does not exist; this server serves '" +
                     options_.model_name + "' (GET /v1/models)", "invalid_request_error",
                     "model", "model_not_found");
    }
    request = build_request(c);
    try {
      streams = engine_.submit(request, c.n);
    } catch (const engine::EngineBusy& e) {
      if (e.closed()) {
        throw ApiError(503, e.what(), "server_error", "", "server_shutting_down",
                       options_.retry_after_s);
      }
      throw ApiError(429, std::string("the server is overloaded: ") + e.what() +
                     "; retry later (--max-waiting)", "rate_limit_error", "", "queue_full",
                     options_.retry_after_s);
    }
  } catch (const ApiError& e) {
    send_error(res, e);
    metrics_.add_time(ServerPhase::kRequest, since(t_start));
    return;
  }
  metrics_.add_time(ServerPhase::kRequest, since(t_start));

  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(streams[0]->id());
  auto job = std::make_shared<Job>(engine_, ResponseBuilder(chat, id, options_.model_name,
                                                            std::time(nullptr)), metrics_);
  job->chat = chat;
  job->tok = text_.tokenizer;
  job->logprobs = c.logprobs;
  job->include_usage = c.include_usage;
  job->usage.prompt_tokens = request.prompt_len;
  const Tokenizer* tok = text_.tokenizer;
  auto decode = [tok](int prev, int t) { return tok->decode_token(prev, t); };
  for (auto& s : streams) {
    job->choices.emplace_back(s, TextStream(decode, request.seq.token_ids.back(),
                                            request.stop_token_ids, request.stop_strings),
                              request.seq.token_ids.back());
  }
  enter();

  if (c.stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");  // nginx: pass each event on at once
    res.set_chunked_content_provider(
        "text/event-stream",
        [job](size_t, httplib::DataSink& sink) {
          // Called again and again until done; each call waits up to 50 ms for tokens.
          const std::string events = job->next_events(std::chrono::milliseconds(50));
          bool written = true;
          if (!events.empty()) {
            const Clock::time_point t = Clock::now();
            written = sink.write(events.data(), events.size());
            job->metrics.add_time(ServerPhase::kWrite, since(t));
            job->metrics.count_events(job->num_events);
            job->num_events = 0;
          }
          // BEGIN EXERCISE ch08.2 "A client that leaves cancels its request" points=10 minutes=20
          // HINT: A client that closed its connection is only seen by the server when it writes
          // HINT: to it: the write fails (`written` is false), or the sink says it is no longer
          // HINT: writable. Returning false ends the response (httplib then runs the release
          // HINT: hook below).
          // STUB: (void)written;
          if (!written || !sink.is_writable()) return false;  // the client went away
          // END EXERCISE
          if (job->done) sink.done();
          return true;
        },
        [this, job](bool) {
          // Whatever ended the response. A client that left must not leave its requests
          // running: their blocks are freed at the engine's next step.
          // BEGIN EXERCISE ch08.2 "A client that leaves cancels its request"
          // HINT: The response ended before every choice finished (`job->done` is false): cancel
          // HINT: the unfinished choices' engine requests (Job::cancel_unfinished).
          // STUB: (void)job;
          if (!job->done) job->cancel_unfinished();
          // END EXERCISE
          leave();
        });
    return;
  }

  // Non-streaming: wait for every choice, then one response.
  std::vector<ChoiceResult> results;
  for (Choice& ch : job->choices) {
    StreamDelta d;
    while (!ch.finished) {
      if (!ch.stream->next(d, std::chrono::milliseconds(100))) continue;
      const Clock::time_point t = Clock::now();
      job->absorb(ch, d);
      metrics_.add_time(ServerPhase::kDetokenize, since(t));
      ch.all.insert(ch.all.end(), ch.pending.begin(), ch.pending.end());
      ch.pending.clear();
    }
  }
  leave();
  for (Choice& ch : job->choices) {
    if (failed(ch.end)) {
      send_error(res, failure_error(ch.end));
      return;
    }
    ChoiceResult r;
    r.text = ch.text.final_text();
    r.logprobs = std::move(ch.all);
    r.with_logprobs = c.logprobs >= 0;
    r.finish_reason = finish_reason_name(ch.end.finish_reason);
    results.push_back(std::move(r));
  }
  const Clock::time_point t = Clock::now();
  res.set_content(dump_json(job->builder.full(results, job->usage)), "application/json");
  metrics_.add_time(ServerPhase::kSerialize, since(t));
}

}  // namespace nanoserve::server
