// GET / (the live view page, embedded at build time from live_view.html) and
// GET /v1/engine/events: the engine's snapshot as a server-sent event every 250 ms.
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

#include "apps/nanoserve/server/api_server.h"
#include "apps/nanoserve/server/live_view_page.h"
#include "apps/nanoserve/server/openai_response.h"

namespace nanoserve::server {

nlohmann::json snapshot_json(const engine::EngineSnapshot& s) {
  nlohmann::json requests = nlohmann::json::array();
  for (const engine::EngineRequestView& r : s.requests) {
    requests.push_back({{"id", r.id}, {"status", r.status}, {"prompt_len", r.prompt_len},
                        {"num_computed_tokens", r.num_computed_tokens},
                        {"num_output_tokens", r.num_output_tokens}, {"max_tokens", r.max_tokens},
                        {"num_prefix_hit_tokens", r.num_prefix_hit_tokens},
                        {"num_preemptions", r.num_preemptions}, {"blocks", r.block_ids}});
  }
  return {{"step", s.step},
          {"step_ms", s.step_ms},
          {"batch_size", s.batch_size},
          {"num_batched_tokens", s.num_batched_tokens},
          {"num_running", s.num_running},
          {"num_waiting", s.num_waiting},
          {"generated", s.num_generated_tokens},
          {"preemptions", s.stats.num_preemptions},
          {"num_kv_blocks", s.num_kv_blocks},
          {"kv", {{"blocks_in_use", s.kv.blocks_in_use}, {"hits", s.kv.hits},
                  {"queries", s.kv.queries}, {"block_copies", s.kv.block_copies},
                  {"evictions", s.kv.evictions}}},
          {"requests", requests},
          {"block_ref_cnt", s.block_ref_cnt},
          {"block_cached", s.block_cached}};
}

void ApiServer::add_live_view_routes() {
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kLiveViewPage, "text/html; charset=utf-8");
  });
  http_->Get("/v1/engine/events", [this](const httplib::Request&, httplib::Response& res) {
    engine_.snapshot(/*watch=*/true);  // the engine starts filling the per-block views
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& sink) {
      if (draining_) {  // the feed ends first, so that draining is not held up by a viewer
        sink.done();
        return true;
      }
      const std::string event = sse_event(snapshot_json(engine_.snapshot(/*watch=*/true)));
      if (!sink.write(event.data(), event.size()) || !sink.is_writable()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      return true;
    });
  });
}

}  // namespace nanoserve::server
