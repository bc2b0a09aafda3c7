#include "common/harness/kv_cache_bench.h"

#include <chrono>
#include <string>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/error.h"
#include "common/sampling/rng.h"

namespace nanoserve::harness {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

KVCacheBenchResult bench_kv_cache_manager(const KVCacheBenchOptions& o) {
  if (o.num_seqs < 1 || o.prompt_tokens < 1 || o.decode_tokens < 0 || o.block_size < 1 ||
      o.shared_prefix_tokens < 0 || o.shared_prefix_tokens > o.prompt_tokens) {
    throw InvalidArgument("bench_kv_cache_manager: need num_seqs, prompt_tokens, block_size >= 1, "
                          "decode_tokens >= 0 and 0 <= shared_prefix_tokens <= prompt_tokens");
  }
  const int tokens_per_seq = o.prompt_tokens + o.decode_tokens;
  const int blocks_per_seq = (tokens_per_seq + o.block_size - 1) / o.block_size;
  KVCacheBenchResult r;
  r.num_blocks = o.num_seqs * blocks_per_seq;
  engine::KVCacheManager kv(r.num_blocks, o.block_size, o.prefix_caching);

  // Prompts are built before the clock starts; vectors are reserved so that appending a
  // token in the decode loop never reallocates.
  constexpr uint32_t kVocab = 32000;
  std::vector<engine::Sequence> seqs(size_t(o.num_seqs));
  for (int s = 0; s < o.num_seqs; ++s) {
    engine::Sequence& seq = seqs[size_t(s)];
    seq.seq_id = s;
    seq.token_ids.reserve(size_t(tokens_per_seq));
    for (int p = 0; p < o.prompt_tokens; ++p) {
      // Shared positions draw from one stream, the rest from a stream per sequence.
      const uint64_t draw = p < o.shared_prefix_tokens ? uint64_t(p)
                                                       : (uint64_t(s + 1) << 32) + uint64_t(p);
      const uint32_t bits = random_bits(o.seed, draw, RngStream::kWorkload)[0];
      seq.token_ids.push_back(int(bits % kVocab));
    }
  }

  auto start = std::chrono::steady_clock::now();
  for (engine::Sequence& seq : seqs) seq.num_computed_tokens = kv.allocate(seq);
  r.allocate_ns = seconds_since(start) * 1e9 / o.num_seqs;
  r.allocate_calls = o.num_seqs;

  start = std::chrono::steady_clock::now();
  for (int step = 0; step < o.decode_tokens; ++step) {
    for (engine::Sequence& seq : seqs) {
      seq.token_ids.push_back(int((seq.seq_id * 7919 + step) % kVocab));
      kv.append_slot(seq);
    }
  }
  r.append_calls = (long long)o.num_seqs * o.decode_tokens;
  if (r.append_calls > 0) r.append_ns = seconds_since(start) * 1e9 / double(r.append_calls);

  const engine::KVCacheMetrics m = kv.metrics();
  r.hit_rate = m.hit_rate();
  r.utilization = m.utilization();

  start = std::chrono::steady_clock::now();
  for (const engine::Sequence& seq : seqs) kv.free(seq.seq_id);
  r.free_ns = seconds_since(start) * 1e9 / o.num_seqs;
  r.free_calls = o.num_seqs;
  return r;
}

}  // namespace nanoserve::harness
