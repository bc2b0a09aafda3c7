// Property test: thousands of random operation sequences on small pools, each step compared
// with the reference model (reference_kv_model.h) and followed by check_invariants().
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/sampling/rng.h"
#include "kv_test_support.h"
#include "reference_kv_model.h"

namespace nanoserve {
namespace {

using testing::ReferenceKV;

// Uniform small integers from the project's counter-based RNG.
struct Draw {
  uint64_t seed;
  uint64_t counter = 0;
  int below(int n) {
    return int(random_bits(seed, counter++, RngStream::kWorkload)[0] % uint32_t(n));
  }
};

// What the runs exercised, so the test cannot pass by never reaching the interesting cases.
struct Coverage {
  long long steps = 0, hits = 0, copies = 0, evictions = 0, exhausted = 0, rollbacks = 0,
            forks = 0, collisions = 0;
};

// Every observable of the manager against the model; an empty string when they agree.
std::string compare(const engine::KVCacheManager& kv, const ReferenceKV& ref, engine::BlockHashFn hash_fn) {
  std::ostringstream diff;
  const engine::BlockPool& pool = kv.pool();
  if (pool.free_queue_ids() != ref.free_list) diff << "free queue differs; ";
  for (int id = 0; id < pool.num_blocks(); ++id) {
    const engine::KVCacheBlock& b = pool.block(id);
    const ReferenceKV::Block& r = ref.blocks[size_t(id)];
    if (b.ref_cnt != r.ref) diff << "block " << id << " ref_cnt " << b.ref_cnt << " vs " << r.ref;
    if (b.cached != r.cached) diff << "block " << id << " cached " << b.cached << "; ";
    if (!b.cached || !r.cached) continue;
    const std::vector<int> last(r.prefix.end() - ref.bs, r.prefix.end());
    engine::BlockHash chain = engine::kRootBlockHash;
    for (size_t i = 0; i < r.prefix.size(); i += size_t(ref.bs)) {
      chain = hash_fn(chain, r.prefix.data() + i, ref.bs);
    }
    if (b.token_ids != last || b.hash != chain) diff << "block " << id << " content differs; ";
  }
  if (kv.num_sequences() != int(ref.tables.size())) diff << "number of sequences differs; ";
  for (const auto& [id, t] : ref.tables) {
    if (!kv.contains(id)) {
      diff << "sequence " << id << " missing; ";
      continue;
    }
    const engine::BlockTable& table = kv.block_table(id);
    if (table.block_ids() != t.blocks || table.num_tokens() != t.num_tokens) {
      diff << "table of sequence " << id << " differs; ";
    }
  }
  const engine::KVCacheMetrics m = kv.metrics();
  if (m.queries != ref.queries || m.hits != ref.hits || m.prefill_tokens_computed != ref.computed ||
      m.prefill_tokens_skipped != ref.skipped || m.block_copies != ref.copies ||
      m.evictions != ref.evictions || m.blocks_free != int(ref.free_list.size()) ||
      m.blocks_cached != int(ref.cache_order.size())) {
    diff << "metrics differ; ";
  }
  std::map<int, int> filled;  // distinct (block, offset) slots in use, the slow way
  for (const auto& [id, t] : ref.tables) {
    for (int pos = 0; pos < t.num_tokens; ++pos) {
      int& f = filled[t.blocks[size_t(pos / ref.bs)]];
      f = std::max(f, pos % ref.bs + 1);
    }
  }
  long long used = 0;
  for (const auto& [block, f] : filled) used += f;
  if (m.used_slots != used) diff << "used slots " << m.used_slots << " vs " << used << "; ";
  diff << kv.check_invariants();
  return diff.str();
}

// One random run: a pool of a few blocks, sequences built from shared prefixes over a tiny
// alphabet (so hits, duplicates and collisions are frequent), and 60 random operations.
void run(uint64_t seed, Coverage* cov) {
  Draw d{seed};
  const int num_blocks = 3 + d.below(14);
  const int bs = 1 + d.below(4);
  const bool caching = d.below(4) != 0;
  const engine::BlockHashFn hashes[] = {&engine::xxh3_block_hash, &testing::weak_hash, &testing::constant_hash};
  const engine::BlockHashFn hash_fn = hashes[d.below(3)];
  engine::KVCacheManager kv(num_blocks, bs, caching, hash_fn);
  ReferenceKV ref(num_blocks, bs, caching);
  std::vector<std::vector<int>> prefixes(3);
  for (auto& p : prefixes) {
    for (int n = d.below(13); n > 0; --n) p.push_back(d.below(3));
  }
  std::map<int64_t, engine::Sequence> live;
  int64_t next_id = 0;
  auto pick = [&]() -> engine::Sequence& {
    auto it = live.begin();
    std::advance(it, d.below(int(live.size())));
    return it->second;
  };
  for (int step = 0; step < 60; ++step) {
    const int op = live.empty() ? 0 : d.below(10);
    std::string what;
    if (op <= 2) {  // admit a new sequence, sometimes only its first chunk
      engine::Sequence seq;
      seq.seq_id = next_id++;
      seq.token_ids = prefixes[size_t(d.below(3))];
      for (int n = 1 + d.below(6); n > 0; --n) seq.token_ids.push_back(d.below(3));
      const int cached = kv.num_cached_tokens(seq);
      ASSERT_EQ(cached, int(ref.lookup(seq.token_ids).size()) * bs) << "seed " << seed;
      const int rest = seq.num_tokens() - cached;
      const int n = d.below(2) == 0 ? -1 : 1 + d.below(rest);
      int ref_cached = -1;
      const bool fits = ref.allocate(seq.seq_id, seq.token_ids, n, &ref_cached);
      ASSERT_EQ(kv.can_allocate(seq, n), fits) << "seed " << seed << " step " << step;
      if (fits) {
        ASSERT_EQ(kv.allocate(seq, n), ref_cached) << "seed " << seed << " step " << step;
        cov->hits += cached > 0;
        live.emplace(seq.seq_id, seq);
      } else {
        ASSERT_THROW(kv.allocate(seq, n), engine::BlockPoolExhausted) << "seed " << seed;
        ++cov->exhausted;
      }
      what = "allocate";
    } else if (op <= 5) {  // grow: the next prefill chunk, or new (decoded/draft) tokens
      engine::Sequence& seq = pick();
      const int slots = kv.block_table(seq.seq_id).num_tokens();
      int n = 0;
      if (slots < seq.num_tokens()) {
        n = 1 + d.below(seq.num_tokens() - slots);
      } else {
        for (n = 1 + d.below(3); int(seq.token_ids.size()) < slots + n;) {
          seq.token_ids.push_back(d.below(3));
        }
      }
      std::vector<engine::BlockCopy> ref_copies;
      const bool fits = ref.append(seq.seq_id, seq.token_ids, n, &ref_copies);
      ASSERT_EQ(kv.can_append(seq, n), fits) << "seed " << seed << " step " << step;
      if (fits) {
        ASSERT_EQ(kv.append_slots(seq, n), ref_copies) << "seed " << seed << " step " << step;
        cov->copies += long(ref_copies.size());
      } else {
        ASSERT_THROW(kv.append_slots(seq, n), engine::BlockPoolExhausted) << "seed " << seed;
        ++cov->exhausted;
      }
      what = "append";
    } else if (op == 6) {  // speculative decoding rejects the last n tokens
      engine::Sequence& seq = pick();
      const int slots = kv.block_table(seq.seq_id).num_tokens();
      const int n = d.below(slots + 1);
      kv.rollback(seq.seq_id, n);
      ref.rollback(seq.seq_id, n);
      seq.token_ids.resize(size_t(slots - n));
      ++cov->rollbacks;
      what = "rollback";
    } else if (op == 7) {  // parallel sampling
      engine::Sequence child = pick();
      const int64_t parent = child.seq_id;
      child.seq_id = next_id++;
      kv.fork(parent, child.seq_id);
      ref.fork(parent, child.seq_id);
      live.emplace(child.seq_id, child);
      ++cov->forks;
      what = "fork";
    } else {
      const int64_t id = pick().seq_id;
      kv.free(id);
      ref.free(id);
      live.erase(id);
      what = "free";
    }
    ++cov->steps;
    ASSERT_EQ(compare(kv, ref, hash_fn), "") << "seed " << seed << " step " << step << " " << what;
  }
  cov->evictions += kv.metrics().evictions;
  if (caching && hash_fn != &engine::xxh3_block_hash) cov->collisions += kv.metrics().blocks_cached > 1;
}

TEST(Ch02KVCacheProperty, ThousandsOfRandomOperationSequencesMatchTheReferenceModel) {
  Coverage cov;
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    run(seed, &cov);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(cov.steps, 3000 * 60);
  // The runs must have reached every interesting path many times.
  EXPECT_GT(cov.hits, 1000);
  EXPECT_GT(cov.copies, 1000);
  EXPECT_GT(cov.evictions, 1000);
  EXPECT_GT(cov.exhausted, 1000);
  EXPECT_GT(cov.rollbacks, 1000);
  EXPECT_GT(cov.forks, 1000);
  EXPECT_GT(cov.collisions, 100);
  std::printf("steps %lld, runs with hits %lld, copies %lld, evictions %lld, exhausted %lld\n",
              cov.steps, cov.hits, cov.copies, cov.evictions, cov.exhausted);
}

}  // namespace
}  // namespace nanoserve
