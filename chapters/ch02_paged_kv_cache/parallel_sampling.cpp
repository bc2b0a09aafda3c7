#include "chapters/ch02_paged_kv_cache/parallel_sampling.h"

#include <algorithm>
#include <cstdio>

#include "common/format_bytes.h"
#include "common/harness/clocks.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/error.h"
#include "common/sampling/sampler.h"

namespace nanoserve::ch02 {
namespace {

// A batch of one chunk per sequence, every row's logits wanted.
engine::ForwardBatch batch_of(const std::vector<const engine::Sequence*>& seqs, int rows_each,
                              const engine::KVCacheManager& manager) {
  engine::ForwardBatch b;
  for (const engine::Sequence* s : seqs) {
    const int start = rows_each > 0 ? s->num_tokens() - rows_each : 0;
    b.add_chunk(s->seq_id, s->token_ids.data() + start, s->num_tokens() - start, start,
                &manager.block_table(s->seq_id));
    b.logit_rows.push_back(b.rows() - 1);
  }
  return b;
}

}  // namespace

ParallelSamplingRun run_parallel_sampling(const engine::DeviceModel& model,
                                          const std::vector<int>& prompt,
                                          const ParallelSamplingConfig& c, bool shared) {
  if (c.n < 1 || c.max_new_tokens < 1 || c.block_size < 1 || c.num_blocks < 1 ||
      c.temperature <= 0.0f) {
    throw InvalidArgument("parallel-sampling: n, new tokens, block size and blocks must be >= 1 "
                          "and the temperature > 0");
  }
  const int vocab = model.config().vocab_size;
  engine::KVCacheManager manager(c.num_blocks, c.block_size, /*enable_prefix_caching=*/false);
  engine::PagedKVCache cache(model.config(), c.kv_dtype.value_or(model.dtype()),
                             manager.pool().num_blocks(), manager.block_size());
  if (prompt.empty() || int(prompt.size()) + c.max_new_tokens > cache.max_seq_len()) {
    throw InvalidArgument("parallel-sampling: a " + std::to_string(prompt.size()) +
                          "-token prompt plus " + std::to_string(c.max_new_tokens) +
                          " new tokens must fit the context of " +
                          std::to_string(cache.max_seq_len()));
  }
  const int prefill_rows = shared ? int(prompt.size()) : c.n * int(prompt.size());
  engine::ModelRunner runner(model, {std::max(prefill_rows, c.n), c.n});

  ParallelSamplingRun run;
  run.shared = shared;
  run.samples.resize(std::size_t(c.n));
  std::vector<engine::Sequence> seqs(std::size_t(c.n));
  for (int i = 0; i < c.n; ++i) {
    seqs[std::size_t(i)].seq_id = i;
    seqs[std::size_t(i)].token_ids = prompt;
    seqs[std::size_t(i)].sampling.temperature = c.temperature;
    seqs[std::size_t(i)].sampling.top_p = c.top_p;
    seqs[std::size_t(i)].sampling.seed = c.seed + std::uint64_t(i);
  }
  const double cpu0 = harness::process_cpu_seconds();
  // The prompt: one prefill shared by n forks, or n prefills (one batch of n chunks).
  std::vector<const engine::Sequence*> prefilled;
  for (int i = 0; i < (shared ? 1 : c.n); ++i) {
    manager.allocate(seqs[std::size_t(i)]);
    prefilled.push_back(&seqs[std::size_t(i)]);
  }
  std::vector<float> logits = runner.forward(batch_of(prefilled, 0, manager), cache);
  if (shared) {
    for (int i = 1; i < c.n; ++i) manager.fork(0, i);
    std::vector<float> first(logits);
    for (int i = 1; i < c.n; ++i) logits.insert(logits.end(), first.begin(), first.end());
  }
  run.prefill_rows = prefill_rows;
  run.prompt_blocks = manager.metrics().blocks_in_use;
  run.peak_blocks = run.prompt_blocks;

  // Decode: sample every live sequence's next token, then one batched pass over them all.
  std::vector<engine::Sequence*> live;
  for (engine::Sequence& s : seqs) live.push_back(&s);
  while (!live.empty()) {
    std::vector<engine::Sequence*> next;
    for (std::size_t k = 0; k < live.size(); ++k) {
      engine::Sequence& s = *live[k];
      const int token = sample(logits.data() + k * std::size_t(vocab), vocab, s.sampling,
                               std::uint64_t(s.num_tokens()));
      std::vector<int>& out = run.samples[std::size_t(s.seq_id)];
      out.push_back(token);
      const bool stop = std::find(c.stop_tokens.begin(), c.stop_tokens.end(), token) !=
                        c.stop_tokens.end();
      if (stop || int(out.size()) == c.max_new_tokens) {
        manager.free(s.seq_id);  // done: its last token is sampled, never fed back
        continue;
      }
      s.token_ids.push_back(token);
      next.push_back(&s);
    }
    live = std::move(next);
    if (live.empty()) break;
    std::vector<engine::BlockCopy> copies;
    for (engine::Sequence* s : live) {
      const std::vector<engine::BlockCopy> c1 = manager.append_slot(*s);  // COW of a shared last block
      copies.insert(copies.end(), c1.begin(), c1.end());
    }
    run.peak_blocks = std::max(run.peak_blocks, manager.metrics().blocks_in_use);
    engine::ForwardBatch batch = batch_of({live.begin(), live.end()}, 1, manager);
    batch.block_copies = std::move(copies);  // performed before the pass writes into them
    logits = runner.forward(batch, cache);
    run.decode_rows += static_cast<long long>(live.size());
    ++run.decode_steps;
  }
  run.cpu_seconds = harness::process_cpu_seconds() - cpu0;
  run.block_copies = manager.metrics().block_copies;
  const std::string broken = manager.check_invariants();
  if (!broken.empty()) throw Error("parallel-sampling: KV cache invariant broken: " + broken);
  return run;
}

bool print_parallel_sampling(const ParallelSamplingRun& unshared, const ParallelSamplingRun& shared,
                             const ParallelSamplingConfig& c, int prompt_tokens,
                             std::int64_t bytes_per_block, nlohmann::json& records) {
  std::printf("\n== parallel sampling: n = %d samples of a %d-token prompt, %d new tokens each, "
              "block %d ==\n", c.n, prompt_tokens, c.max_new_tokens, c.block_size);
  std::printf("  %-30s %13s %11s %12s %7s %12s %7s\n", "mode", "prompt blocks", "peak blocks",
              "peak KV", "copies", "prefill rows", "CPU s");
  for (const ParallelSamplingRun* r : {&unshared, &shared}) {
    const char* mode = r->shared ? "shared (fork + copy-on-write)" : "unshared (n prompts)";
    std::printf("  %-30s %13d %11d %12s %7lld %12lld %7.2f\n", mode, r->prompt_blocks,
                r->peak_blocks, format_bytes(r->peak_blocks * bytes_per_block).c_str(),
                r->block_copies, r->prefill_rows, r->cpu_seconds);
    records.push_back({{"table", "parallel_sampling"}, {"shared", r->shared}, {"n", c.n},
                       {"prompt_tokens", prompt_tokens}, {"max_new_tokens", c.max_new_tokens},
                       {"block_size", c.block_size}, {"prompt_blocks", r->prompt_blocks},
                       {"peak_blocks", r->peak_blocks},
                       {"peak_bytes", r->peak_blocks * bytes_per_block},
                       {"block_copies", r->block_copies}, {"prefill_rows", r->prefill_rows},
                       {"decode_rows", r->decode_rows}, {"decode_steps", r->decode_steps},
                       {"cpu_seconds", r->cpu_seconds}, {"samples", r->samples}});
  }
  bool same = unshared.samples == shared.samples;
  int distinct = 0;
  for (std::size_t i = 0; i < shared.samples.size(); ++i) {
    distinct += std::find(shared.samples.begin(), shared.samples.begin() + std::ptrdiff_t(i),
                          shared.samples[i]) == shared.samples.begin() + std::ptrdiff_t(i);
  }
  std::printf("  %d of %d samples differ from each other; every sample identical shared and "
              "unshared (same seeds): %s\n", distinct, c.n, same ? "yes" : "NO");
  records.push_back({{"table", "parallel_sampling_check"}, {"identical", same},
                     {"distinct_samples", distinct}});
  return same;
}

}  // namespace nanoserve::ch02
