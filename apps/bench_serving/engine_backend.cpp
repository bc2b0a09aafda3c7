#include "apps/bench_serving/engine_backend.h"

#include "common/engine/serve/model_executor.h"
#include "common/error.h"

namespace nanoserve::bench {

EngineBackend::EngineBackend(const EngineBackendOptions& o) : bundle_(load_model_bundle(o.model)) {
  // As cmd_serve.cpp: the model's context, a pool for max_num_seqs full-length requests.
  engine::SchedulerConfig sc;
  sc.max_num_seqs = o.max_num_seqs;
  sc.max_num_batched_tokens = o.max_num_batched_tokens;
  sc.block_size = o.block_size;
  sc.max_model_len = bundle_.model.config.max_seq_len;
  const int blocks_per_request = (sc.max_model_len + sc.block_size - 1) / sc.block_size;
  sc.num_kv_blocks = o.num_kv_blocks > 0 ? o.num_kv_blocks : sc.max_num_seqs * blocks_per_request;
  sc.enable_prefix_caching = true;
  sc.validate();
  const DType dtype = parse_dtype(o.dtype);
  model_ = std::make_unique<engine::DeviceModel>(bundle_.model, dtype);
  engine::ModelExecutorOptions eo = engine::executor_options_for(sc);
  eo.activation_dtype = dtype;
  eo.kv_dtype = dtype;
  auto executor = std::make_unique<engine::ModelExecutor>(*model_, eo);
  device_ = executor->device_name();
  engine::AsyncEngineOptions ao;
  ao.max_waiting = o.max_waiting;
  const Tokenizer* tok = bundle_.tokenizer.get();
  engine_ = std::make_unique<engine::AsyncEngine>(
      sc, std::move(executor), [tok](int prev, int t) { return tok->decode_token(prev, t); }, ao);
}

EngineBackend::~EngineBackend() = default;

RequestOutcome EngineBackend::run(const BenchRequest& r, Clock::time_point start,
                                  Clock::time_point deadline) {
  RequestOutcome out;
  out.sent = true;
  out.prompt_tokens = static_cast<int>(r.prompt.size());
  SamplingParams sampling;
  sampling.temperature = r.temperature;
  sampling.seed = r.seed;
  engine::Request request = engine::make_request(0, r.prompt, r.max_tokens, sampling);
  if (!r.ignore_eos) request.stop_token_ids = r.stop_token_ids;
  out.send_s = seconds_since(start);
  std::shared_ptr<engine::RequestStream> stream;
  try {
    stream = engine_->submit(std::move(request)).at(0);
  } catch (const std::exception& e) {
    out.error = std::string("submit: ") + e.what();
    out.end_s = seconds_since(start);
    return out;
  }
  engine::StreamDelta d;
  for (;;) {
    if (Clock::now() >= deadline) {
      engine_->cancel(stream->id());
      out.incomplete = true;
      out.error = "cut by --max-duration";
      break;
    }
    if (!stream->next(d, std::chrono::milliseconds(50))) continue;
    if (!d.tokens.empty()) out.chunk_s.push_back(seconds_since(start));
    out.output_tokens += static_cast<int>(d.tokens.size());
    if (d.finished) {
      if (d.finish_reason != engine::FinishReason::kStop &&
          d.finish_reason != engine::FinishReason::kLength) {
        out.error = "finished as " + std::string(engine::to_string(d.finish_reason)) + ": " +
                    d.finish_detail;
      }
      break;
    }
  }
  out.end_s = seconds_since(start);
  out.ok = out.error.empty();
  return out;
}

}  // namespace nanoserve::bench
