#pragma once
/// \file
/// \brief The measurement behind `bench_decode`: decode steps of B sequences through
/// `ModelRunner` + `PagedKVCache` + `DeviceSampler` — the engine's step: one upload, the pass
/// (replayed from a CUDA graph, or launched kernel by kernel), greedy tokens back — timed on the
/// wall clock, and the device-to-device copy bandwidth that turns the model's weight bytes into
/// a roofline.
///
/// Decode at small batch is weight streaming: every step reads all weights once, so
///
///     roofline tokens/s = B × copy bandwidth / (weight bytes + KV bytes read per step)
///
/// and the ratio measured / roofline says how close the engine gets to the hardware.
#include <cstdint>
#include <string>

#include "common/engine/model/device_model.h"

namespace nanoserve::bench {

/// \brief One batch size's measurement.
struct DecodeResult {
  int batch = 0;                 ///< sequences decoded together
  bool cuda_graphs = false;      ///< the passes were replayed from a CUDA graph
  int context = 0;               ///< positions each sequence holds when timing starts
  int steps = 0;                 ///< timed decode steps
  double seconds = 0;            ///< wall time of the timed steps
  double tokens_per_s = 0;       ///< batch × steps / seconds
  double ms_per_step = 0;        ///< seconds / steps, in ms
  double bytes_per_step = 0;     ///< weight bytes + K/V bytes the step's attention reads
  double roofline_tokens_per_s = 0;  ///< batch × copy bandwidth / bytes_per_step
};

/// \brief Device-to-device copy bandwidth in GB/s (bytes read + bytes written per second,
/// as bench_kernels and NVIDIA's bandwidthTest count it), best of several `bytes` copies.
double copy_bandwidth_gbs(std::size_t bytes);

/// \brief Times `steps` decode steps (after `warmup` untimed ones, which capture the graph) of
/// `batch` sequences that each already hold `context` positions (their K/V are zeros: values
/// do not change the time), with KV blocks of `block_size` tokens stored as `kv_dtype`;
/// with `cuda_graphs` every step replays one graph of `batch` rows.
DecodeResult measure_decode(const engine::DeviceModel& model, DType kv_dtype, int batch,
                            int context, int steps, int warmup, int block_size, double copy_gbs,
                            bool cuda_graphs);

}  // namespace nanoserve::bench
