#pragma once
/// \file
/// \brief A roofline model of one forward pass: for a model shape, a batch shape and a
/// precision, the bytes every kernel moves and the FLOPs it does, and the time a named GPU
/// (`device.h`) would take — each kernel at the slower of its two limits, plus launch cost:
///
///     time = Σ_kernels max(bytes / (BW · f_bw), FLOPs / (peak · f_flops)) + launches
///
/// Bytes: the weights once per pass in their storage type (quantized linears with their fp16
/// scales and zero points), the KV cache read by attention and written by the new rows in the
/// KV type, and every activation a kernel reads or writes in the activation type (logits in
/// fp32). FLOPs: 2 per multiply-add of the GEMMs and attention (QKᵀ and PV, causal), a few per
/// element for norms, RoPE, SwiGLU and sampling. The kernel set is the engine's fused one (one
/// QKV GEMM, gate+up with SwiGLU in its epilogue, RoPE with the KV append; kernels/README.md,
/// "Fusions"):
///
///     embedding → per layer × L: attn_norm, qkv_proj, rope_kv_append, attention, o_proj,
///                                 ffn_norm, gate_up_proj, down_proj
///               → final_norm, lm_head, sampling            (4 + 8L launches)
///
/// or, with `Assumptions::fused` off, the unfused one it replaced, to see what the fusions save:
///
///     per layer: attn_norm, q_proj, k_proj, v_proj, rope, kv_append, attention, o_proj,
///                ffn_norm, gate_proj, up_proj, swiglu, down_proj      (4 + 13L launches)
///
/// What it leaves out, on purpose: caches (every byte comes from DRAM once; weights never fit
/// L2 across layers), the tail effects of small grids (a 1-row GEMV on 132 SMs is assumed to
/// reach the same bandwidth as a big one), host work between passes. It is a lower bound of a
/// good implementation, not a prediction of this project's kernels (docs/roofline.md).

#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/roofline/device.h"

namespace nanoserve::roofline {

// Assumptions: named, each with its reason; none is measured here (docs/roofline.md).

/// \brief Fraction of the datasheet bandwidth a streaming kernel reaches: well-written copy
/// and GEMV kernels on HBM reach about 80–90% of the peak printed by the vendor; 0.8 is the
/// low end, so a modeled time is not more optimistic than a good kernel.
constexpr double kAchievableBandwidthFraction = 0.8;
/// \brief Fraction of the dense peak FLOP/s a large GEMM reaches: vendor GEMM libraries
/// commonly reach 70–80% of the dense tensor-core peak at large sizes; 0.7 is the low end.
constexpr double kAchievableComputeFraction = 0.7;
/// \brief Cost of one eager kernel launch as seen by the GPU (launch latency and the idle gap
/// between dependent kernels): a few microseconds on current drivers; 4 µs is typical.
constexpr double kKernelLaunchSeconds = 4e-6;
/// \brief Cost of replaying a whole pass as one CUDA graph: one launch of ~10 µs, plus
/// `kGraphNodeSeconds` per kernel in it (graph nodes still run back to back, with a smaller gap).
constexpr double kGraphLaunchSeconds = 10e-6;
/// \brief The gap between two kernels inside a replayed graph: about 1 µs.
constexpr double kGraphNodeSeconds = 1e-6;

/// \brief The constants above, as one value a caller may change (tests use the ideal: 1, 1, 0).
struct Assumptions {
  double bandwidth_fraction = kAchievableBandwidthFraction;  ///< of the device's bandwidth
  double compute_fraction = kAchievableComputeFraction;      ///< of the device's peak FLOP/s
  double launch_s = kKernelLaunchSeconds;        ///< per kernel, eager launches
  bool cuda_graph = false;                       ///< the pass replayed as one graph
  double graph_launch_s = kGraphLaunchSeconds;   ///< per pass, with `cuda_graph`
  double graph_node_s = kGraphNodeSeconds;       ///< per kernel, with `cuda_graph`
  /// \brief The engine's fused kernel set (true) or the unfused one (separate q/k/v and
  /// gate/up projections, RoPE, KV append and SwiGLU kernels: see the file comment).
  bool fused = true;
  /// \brief The ideal machine: all of the peaks, no launch cost (fused kernels).
  static Assumptions ideal() { return {1.0, 1.0, 0.0, false, 0.0, 0.0, true}; }
};

/// \brief How the pass stores what it moves.
struct Precision {
  /// \brief Bytes of one element of a dense weight: embedding, classifier, norms, and the
  /// linears when `quant_bits == 0` (4 fp32, 2 fp16/bf16).
  double dense_bytes = 2;
  int quant_bits = 0;        ///< 0: dense linears; 4 or 8: weight-only quantized linears
  int group_size = 128;      ///< quantized: columns per fp16 scale (0 = one scale per row)
  bool zero_point = false;   ///< quantized: a stored fp16 zero point per group as well
  double activation_bytes = 2;  ///< bytes of one activation element between kernels
  double kv_bytes = 2;          ///< bytes of one K or V element in the cache
  /// \brief GEMMs and attention at the dense tensor-core rate (fp16/bf16 inputs); false: at
  /// the fp32 CUDA-core rate (fp32 inputs).
  bool tensor_cores = true;

  /// \brief Weights, activations and KV of `bytes` each (4: fp32 on CUDA cores; 2: fp16/bf16
  /// on tensor cores). Throws `InvalidArgument` for any other size.
  static Precision dense(int bytes);
  /// \brief Weight-only quantized linears (`bits` 4 or 8, fp16 scales every `group_size`
  /// columns, 0 = per row) over `base` (embedding, classifier, norms, activations and KV stay
  /// as in `base`). Throws `InvalidArgument` for other bits or a negative group size.
  static Precision weight_only(int bits, int group_size, bool zero_point, Precision base);
  /// \brief Bytes of a (rows, cols) linear weight in this precision, scales included.
  double linear_bytes(double rows, double cols) const;
  /// \brief A short label: "fp32", "fp16", "int4-g128 (fp32 act)", …
  std::string label() const;
};

/// \brief A run of consecutive positions of one sequence in the pass (as the engine's
/// `SequenceChunk`: `num_tokens` rows starting at `start_pos`, attending to positions
/// `[0, start_pos + num_tokens)`).
struct ChunkShape {
  int start_pos = 0;     ///< position of the first row (tokens already in the KV cache)
  int num_tokens = 1;    ///< rows of the chunk (>= 1)
  bool samples = true;   ///< whether the last row needs logits and a sampled token
};

/// \brief The shape of one forward pass: its chunks, in row order (the engine's
/// `ForwardBatch` without the token ids and block tables, which cost nothing here).
struct PassShape {
  std::vector<ChunkShape> chunks;  ///< prefill chunks and decode rows, in any mix

  /// \brief Rows T: Σ num_tokens.
  long long rows() const;
  /// \brief Rows that need logits (one per sampling chunk).
  long long sampled_rows() const;
  /// \brief `batch` sequences decoding one token each, every one with `context` positions
  /// already cached.
  static PassShape decode(int batch, int context);
  /// \brief One prompt of `tokens` rows from position 0, sampling its last row.
  static PassShape prefill(int tokens);
};

/// \brief What one kernel of the pass costs (over all its launches: per-layer kernels run L
/// times).
struct KernelCost {
  std::string name;          ///< e.g. "qkv_proj"
  int launches = 0;          ///< per pass (n_layers for per-layer kernels)
  double weight_bytes = 0;   ///< weights read (incl. scales)
  double kv_bytes = 0;       ///< KV cache read and written
  double activation_bytes = 0;  ///< activations (and logits) read and written
  double flops = 0;          ///< floating-point operations
  double memory_s = 0;       ///< bytes / achievable bandwidth
  double compute_s = 0;      ///< FLOPs / achievable peak of the unit the kernel runs on
  double launch_s = 0;       ///< launch overhead charged to it
  /// \brief Bytes moved: weights + KV + activations.
  double bytes() const { return weight_bytes + kv_bytes + activation_bytes; }
  /// \brief max(memory_s, compute_s) + launch_s.
  double time_s() const { return (memory_s > compute_s ? memory_s : compute_s) + launch_s; }
  /// \brief Whether bandwidth, not FLOPs, is the limit.
  bool memory_bound() const { return memory_s >= compute_s; }
};

/// \brief The cost of one pass, kernel by kernel.
struct PassCost {
  const Device* device = nullptr;    ///< the GPU it is modeled on
  std::vector<KernelCost> kernels;   ///< in launch order
  double graph_s = 0;                ///< the graph launch, when the pass is one graph
  /// \brief Σ kernel times + graph launch, seconds.
  double time_s() const;
  /// \brief Σ bytes moved.
  double bytes() const;
  /// \brief Σ weight bytes.
  double weight_bytes() const;
  /// \brief Σ FLOPs.
  double flops() const;
  /// \brief Σ launches.
  int launches() const;
  /// \brief The kernel named `name`; throws `InvalidArgument` when the pass has none.
  const KernelCost& kernel(const std::string& name) const;
};

/// \brief The modeled cost of one forward pass of `config` over `shape` on `device`. Throws
/// `InvalidArgument` for an empty shape or a chunk with no rows or a negative position.
PassCost pass_cost(const ModelConfig& config, const PassShape& shape, const Precision& precision,
                   const Device& device, const Assumptions& assumptions = {});

/// \brief The per-kernel breakdown as a fixed-width table (one line per kernel and a total).
std::string format_breakdown(const PassCost& cost);

}  // namespace nanoserve::roofline
