#include "apps/bench_decode/decode_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/device_sampler.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "kernels/device_buffer.h"

namespace nanoserve::bench {

double copy_bandwidth_gbs(std::size_t bytes) {
  DeviceBuffer<unsigned char> src(bytes), dst(bytes);
  CUDA_CHECK(cudaMemset(src.get(), 1, bytes));
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  float best_ms = 0;
  for (int rep = 0; rep < 6; ++rep) {
    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (rep > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;  // rep 0 warms up
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return best_ms > 0 ? 2.0 * double(bytes) / (best_ms * 1e-3) / 1e9 : 0.0;
}

DecodeResult measure_decode(const engine::DeviceModel& model, DType kv_dtype, int batch,
                            int context, int steps, int warmup, int block_size, double copy_gbs,
                            bool cuda_graphs) {
  const ModelConfig& c = model.config();
  const int final_len = context + warmup + steps;
  const int blocks_per_seq = (final_len + block_size - 1) / block_size;
  engine::KVCacheManager manager(batch * blocks_per_seq, block_size, /*enable_prefix_caching=*/false);
  engine::PagedKVCache cache(c, kv_dtype, manager.pool().num_blocks(), block_size,
                            std::min(c.max_seq_len, final_len));
  engine::RunnerOptions options{batch, batch};
  options.cuda_graphs = cuda_graphs;  // one bucket of exactly `batch` rows: no padding
  engine::ModelRunner runner(model, options);
  cache.zero(runner.stream());  // the reserved context's K/V: zeros, not whatever memory held
  engine::DeviceSampler sampler(batch, c.vocab_size, runner.stream());
  const std::vector<SamplingParams> greedy(static_cast<std::size_t>(batch), SamplingParams{0.0f});

  // Each sequence starts with `context` positions reserved (their K/V are zeros).
  std::vector<engine::Sequence> seqs(static_cast<std::size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    engine::Sequence& s = seqs[static_cast<std::size_t>(b)];
    s.seq_id = b;
    for (int p = 0; p < context; ++p) s.token_ids.push_back((p * 31 + b) % c.vocab_size);
    manager.allocate(s);
    s.num_computed_tokens = context;
  }
  auto step = [&] {
    engine::ForwardBatch fb;
    std::vector<std::uint64_t> positions;
    for (engine::Sequence& s : seqs) {
      const int pos = s.num_tokens();
      s.token_ids.push_back((pos * 17 + int(s.seq_id)) % c.vocab_size);
      manager.append_slot(s);  // no copies: nothing is shared
      fb.add_chunk(s.seq_id, &s.token_ids.back(), 1, pos, &manager.block_table(s.seq_id));
      fb.logit_rows.push_back(static_cast<int>(fb.chunks.size()) - 1);
      positions.push_back(static_cast<std::uint64_t>(pos + 1));
    }
    // The engine's step: sampling parameters in the same upload, greedy tokens back (the
    // step's one synchronization). The inputs stay synthetic, so every step costs the same.
    runner.forward_on_device(fb, cache, [&](engine::StepStaging& staging) {
      sampler.stage(staging, greedy, positions);
    });
    (void)sampler.sample_staged(runner.device_logits());
  };
  for (int i = 0; i < warmup; ++i) step();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  DecodeResult r;
  r.batch = batch;
  r.cuda_graphs = cuda_graphs;
  r.context = context;
  r.steps = steps;
  r.seconds = seconds;
  r.tokens_per_s = double(batch) * steps / seconds;
  r.ms_per_step = 1e3 * seconds / steps;
  const double kv_per_token = double(c.kv_bytes_per_token(dtype_bytes(kv_dtype)));
  const double mean_len = context + warmup + 0.5 * steps;
  r.bytes_per_step = double(model.weight_bytes()) + batch * mean_len * kv_per_token;
  r.roofline_tokens_per_s = copy_gbs > 0 ? batch * copy_gbs * 1e9 / r.bytes_per_step : 0;
  return r;
}

}  // namespace nanoserve::bench
