#include "common/engine/disagg/handoff.h"

#include "common/error.h"
#include "common/io/wire.h"

namespace nanoserve::engine {

namespace {

constexpr std::uint8_t kMagic = 0x9d;

}  // namespace

HandOff HandOff::of(const Request& r, int num_blocks) {
  HandOff h;
  h.id = r.id();
  h.first_token = r.num_output_tokens() > 0 ? r.seq.token_ids[std::size_t(r.prompt_len)] : -1;
  h.num_blocks = num_blocks;
  h.finished = r.finished();
  h.finish_reason = r.finish_reason;
  h.finish_detail = r.finish_detail;
  h.output_text = r.output_text;
  h.first_scheduled_s = r.first_scheduled_s;
  h.token_time_s = r.token_times_s.empty() ? -1 : r.token_times_s.front();
  h.finished_s = r.finished_s;
  h.num_prefix_hit_tokens = r.num_prefix_hit_tokens;
  h.num_preemptions = r.num_preemptions;
  return h;
}

std::vector<std::uint8_t> HandOff::encode() const {
  WireWriter w;
  w.put(kMagic);
  w.put(static_cast<std::uint8_t>(done));
  w.put(id);
  w.put(first_token);
  w.put(num_blocks);
  w.put(static_cast<std::uint8_t>(finished));
  w.put(static_cast<std::int32_t>(finish_reason));
  w.put_string(finish_detail);
  w.put_string(output_text);
  w.put(first_scheduled_s);
  w.put(token_time_s);
  w.put(finished_s);
  w.put(num_prefix_hit_tokens);
  w.put(num_preemptions);
  return w.take();
}

HandOff HandOff::decode(const std::vector<std::uint8_t>& bytes) {
  WireReader r(bytes, "hand-off message");
  if (r.get<std::uint8_t>() != kMagic) throw InvalidArgument("hand-off message: bad magic byte");
  HandOff h;
  h.done = r.get<std::uint8_t>() != 0;
  h.id = r.get<std::int64_t>();
  h.first_token = r.get<int>();
  h.num_blocks = r.get<int>();
  h.finished = r.get<std::uint8_t>() != 0;
  const auto reason = r.get<std::int32_t>();
  if (reason < 0 || reason > static_cast<std::int32_t>(FinishReason::kRejected)) {
    throw InvalidArgument("hand-off message: finish reason " + std::to_string(reason));
  }
  h.finish_reason = static_cast<FinishReason>(reason);
  h.finish_detail = r.get_string();
  h.output_text = r.get_string();
  h.first_scheduled_s = r.get<double>();
  h.token_time_s = r.get<double>();
  h.finished_s = r.get<double>();
  h.num_prefix_hit_tokens = r.get<int>();
  h.num_preemptions = r.get<int>();
  r.expect_end();
  if (h.num_blocks < 0 || (h.finished && h.num_blocks != 0) || (!h.done && !h.finished && h.first_token < 0)) {
    throw InvalidArgument("hand-off message of request " + std::to_string(h.id) +
                          ": inconsistent (blocks " + std::to_string(h.num_blocks) + ", token " +
                          std::to_string(h.first_token) + ")");
  }
  return h;
}

void HandOff::apply_to(Request& r) const {
  if (r.id() != id || r.num_output_tokens() != 0) {
    throw InvalidArgument("hand-off of request " + std::to_string(id) + " applied to request " +
                          std::to_string(r.id()) + " with " +
                          std::to_string(r.num_output_tokens()) + " tokens generated");
  }
  if (first_token >= 0) {
    r.seq.token_ids.push_back(first_token);
    r.token_times_s.push_back(token_time_s);
  }
  r.first_scheduled_s = first_scheduled_s;
  r.num_prefix_hit_tokens = num_prefix_hit_tokens;
  r.num_preemptions = num_preemptions;
  r.output_text = output_text;
  if (finished) {
    r.status = RequestStatus::kFinished;
    r.finish_reason = finish_reason;
    r.finish_detail = finish_detail;
    r.finished_s = finished_s;
  }
}

}  // namespace nanoserve::engine
