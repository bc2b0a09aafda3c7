// Chapter 9's KV hand-off inside one process: the KV a prompt left in one executor's pool,
// packed in block-table order and unpacked into other blocks of another executor's pool, is the
// same bit for bit, and the adopting side decodes the very tokens the prefilling side would.
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/scheduler.h"
#include "common/loaders/synthetic_model.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {
namespace {

SchedulerConfig pool(int blocks) {
  SchedulerConfig c;
  c.num_kv_blocks = blocks;
  c.block_size = 4;
  c.max_model_len = 48;
  c.max_num_batched_tokens = 48;
  c.max_num_seqs = 4;
  return c;
}

TEST(Ch09KVPack, PackedBlocksUnpackIntoOtherBlocksBitForBitAndDecodingContinues) {
  const Model model = make_synthetic_model("tiny");
  const DeviceModel device(model, DType::kF32);
  Scheduler prefill(pool(12)), decode(pool(12));
  ModelExecutor a(device, executor_options_for(prefill.config()));
  ModelExecutor b(device, executor_options_for(decode.config()));

  // The decode side already holds another request, so the adopted blocks are not 0, 1, …
  // (its KV never arrives in this test: zeros, not the pool's fresh NaN bytes).
  b.kv_cache().zero(b.stream());
  Request other = make_request(1, {1, 9, 9, 9, 9}, 4);
  other.seq.token_ids.push_back(3);
  decode.adopt(other);

  const std::vector<int> prompt{1, 17, 33, 5, 60, 61, 2, 8, 100, 44, 45, 46, 47};  // 13 tokens
  prefill.add_request(make_request(7, prompt, 6));
  SchedulerOutput out = prefill.schedule();
  prefill.update(out, a.execute(out));
  Request r = prefill.hand_off(7);
  const std::vector<int> sent = prefill.kv().block_table(7).block_ids();
  ASSERT_EQ(sent.size(), 4u);

  DeviceBuffer<unsigned char> wire(sent.size() * a.kv_cache().packed_block_bytes());
  a.kv_cache().pack_blocks(sent, wire.get(), a.stream());
  EXPECT_EQ(decode.adopt(r), 0);
  const std::vector<int> got = decode.kv().block_table(7).block_ids();
  EXPECT_EQ(got, (std::vector<int>{2, 3, 4, 5}));
  b.kv_cache().unpack_blocks(got, wire.get(), b.stream());
  CUDA_CHECK(cudaStreamSynchronize(b.stream()));
  for (int layer = 0; layer < model.config.n_layers; ++layer) {
    for (bool values : {false, true}) {
      EXPECT_EQ(b.kv_cache().to_host(got, layer, 13, values),
                a.kv_cache().to_host(sent, layer, 13, values))
          << "layer " << layer << (values ? " V" : " K");
    }
  }
  // Token 1 of request 7, computed from the moved KV, equals the one the prefill side computes
  // from its own (greedy).
  prefill.release_handed_off(7);
  prefill.add_request(make_request(8, prompt, 6));
  out = prefill.schedule();
  prefill.update(out, a.execute(out));  // hits the cached blocks, recomputes the last one
  out = prefill.schedule();
  const std::vector<int> here = a.execute(out);
  SchedulerOutput step = decode.schedule();
  ASSERT_EQ(step.seqs.size(), 2u);
  const std::vector<int> there = b.execute(step);
  EXPECT_EQ(there[1], here[0]);

  EXPECT_THROW(a.kv_cache().pack_blocks({12}, wire.get(), a.stream()), InvalidArgument);
  EXPECT_THROW(b.kv_cache().unpack_blocks({-1}, wire.get(), b.stream()), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine
