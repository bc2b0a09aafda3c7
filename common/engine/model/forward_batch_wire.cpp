#include "common/engine/model/forward_batch_wire.h"

#include "common/io/wire.h"

namespace nanoserve::engine {

std::vector<std::uint8_t> encode_batch(const ForwardBatch& b) {
  WireWriter w;
  w.put_vector(b.tokens);
  w.put(static_cast<std::uint64_t>(b.chunks.size()));
  for (const SequenceChunk& c : b.chunks) {
    w.put(c.seq);
    w.put(c.start_pos);
    w.put(c.num_tokens);
    w.put_vector(c.block_ids);
  }
  w.put_vector(b.logit_rows);
  w.put_vector(b.slot_mapping);
  w.put_vector(b.block_copies);
  return w.take();
}

ForwardBatch decode_batch(const std::vector<std::uint8_t>& bytes) {
  WireReader r(bytes, "forward batch message");
  ForwardBatch b;
  b.tokens = r.get_vector<int>();
  const auto n = r.get<std::uint64_t>();
  if (n > bytes.size()) throw InvalidArgument("forward batch message: " + std::to_string(n) + " chunks");
  for (std::uint64_t i = 0; i < n; ++i) {
    SequenceChunk c;
    c.seq = r.get<std::int64_t>();
    c.start_pos = r.get<int>();
    c.num_tokens = r.get<int>();
    c.block_ids = r.get_vector<int>();
    b.chunks.push_back(std::move(c));
  }
  b.logit_rows = r.get_vector<int>();
  b.slot_mapping = r.get_vector<std::int64_t>();
  b.block_copies = r.get_vector<BlockCopy>();
  r.expect_end();
  return b;
}

}  // namespace nanoserve::engine
