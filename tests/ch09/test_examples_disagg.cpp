// Examples of the disaggregated run's types (\snippet sources), compiled and run.
#include <gtest/gtest.h>

#include "common/engine/disagg/disaggregated.h"
#include "common/engine/disagg/handoff.h"
#include "common/io/wire.h"

namespace nanoserve::engine {
namespace {

TEST(Ch09Examples, DisaggConfig) {
  //! [DisaggConfig]
  // mpirun -np 3: rank 0 decodes, ranks 1 and 2 compute prompts.
  DisaggConfig config;
  config.decode_rank = 0;
  config.prefill.num_kv_blocks = 64;   // enough for the prompts in flight
  config.decode.num_kv_blocks = 512;   // the decode instance holds every running request's KV
  config.validate(/*num_ranks=*/3);
  // After the run: what crossed between the instances (filled by run_disaggregated).
  DisaggStats stats;
  //! [DisaggConfig]
  EXPECT_EQ(&config.role(0), &config.decode);
  EXPECT_EQ(&config.role(2), &config.prefill);
  EXPECT_EQ(stats.handoffs, 0);
  EXPECT_THROW(config.validate(1), InvalidArgument);
}

TEST(Ch09Examples, HandOff) {
  //! [HandOff]
  Request r = make_request(7, {1, 5, 9, 4, 3}, /*max_tokens=*/8);
  r.seq.token_ids.push_back(11);  // the first token, sampled by the prefill instance
  r.token_times_s.push_back(0.25);
  const HandOff h = HandOff::of(r, /*num_blocks=*/2);  // its 2 KV blocks follow
  const HandOff received = HandOff::decode(h.encode());
  Request copy = make_request(7, {1, 5, 9, 4, 3}, 8);  // the decode instance's copy
  received.apply_to(copy);                              // now holds token 11 at 0.25 s
  //! [HandOff]
  EXPECT_EQ(copy.seq.token_ids, r.seq.token_ids);
  EXPECT_EQ(copy.token_times_s, r.token_times_s);
  EXPECT_EQ(received.num_blocks, 2);
  EXPECT_FALSE(received.finished);
}

TEST(Ch09Examples, Wire) {
  //! [Wire]
  WireWriter w;
  w.put(std::int64_t{42});
  w.put_string("stop token 2");
  w.put_vector(std::vector<int>{3, 1, 4});
  const std::vector<std::uint8_t> bytes = w.take();
  WireReader r(bytes, "example message");
  const auto id = r.get<std::int64_t>();        // 42
  const std::string detail = r.get_string();    // "stop token 2"
  const std::vector<int> v = r.get_vector<int>();  // {3, 1, 4}
  r.expect_end();
  //! [Wire]
  EXPECT_EQ(id, 42);
  EXPECT_EQ(detail, "stop token 2");
  EXPECT_EQ(v, (std::vector<int>{3, 1, 4}));
  const std::vector<std::uint8_t> cut(bytes.begin(), bytes.end() - 1);
  WireReader short_read(cut, "example message");
  short_read.get<std::int64_t>();
  short_read.get_string();
  EXPECT_THROW(short_read.get_vector<int>(), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine
