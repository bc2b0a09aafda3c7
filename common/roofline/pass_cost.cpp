#include "common/roofline/pass_cost.h"

#include <cstdio>

#include "common/error.h"

namespace nanoserve::roofline {

Precision Precision::dense(int bytes) {
  if (bytes != 4 && bytes != 2) {
    throw InvalidArgument("roofline: a dense precision has 4 (fp32) or 2 (fp16/bf16) bytes, not " +
                          std::to_string(bytes));
  }
  Precision p;
  p.dense_bytes = p.activation_bytes = p.kv_bytes = bytes;
  p.tensor_cores = bytes == 2;
  return p;
}

Precision Precision::weight_only(int bits, int group_size, bool zero_point, Precision base) {
  if ((bits != 4 && bits != 8) || group_size < 0) {
    throw InvalidArgument("roofline: weight-only quantization takes 4 or 8 bits and a group size "
                          ">= 0 (got " + std::to_string(bits) + " bits, group " +
                          std::to_string(group_size) + ")");
  }
  base.quant_bits = bits;
  base.group_size = group_size;
  base.zero_point = zero_point;
  return base;
}

double Precision::linear_bytes(double rows, double cols) const {
  if (quant_bits == 0) return rows * cols * dense_bytes;
  // A row is cut into ceil(cols / g) groups, each with an fp16 scale (and zero point).
  const double g = group_size == 0 || group_size > cols ? cols : group_size;
  const double groups = static_cast<double>(static_cast<long long>((cols + g - 1) / g));
  return rows * cols * quant_bits / 8.0 + rows * groups * 2.0 * (zero_point ? 2 : 1);
}

std::string Precision::label() const {
  const char* dense = dense_bytes == 4 ? "fp32" : "fp16";
  if (quant_bits == 0) return dense;
  return "int" + std::to_string(quant_bits) +
         (group_size == 0 ? std::string("-ch") : "-g" + std::to_string(group_size)) +
         (zero_point ? "-asym" : "") + " (" + (activation_bytes == 4 ? "fp32" : "fp16") + " act)";
}

long long PassShape::rows() const {
  long long n = 0;
  for (const ChunkShape& c : chunks) n += c.num_tokens;
  return n;
}

long long PassShape::sampled_rows() const {
  long long n = 0;
  for (const ChunkShape& c : chunks) n += c.samples;
  return n;
}

PassShape PassShape::decode(int batch, int context) {
  PassShape s;
  s.chunks.assign(static_cast<size_t>(batch), ChunkShape{context, 1, true});
  return s;
}

PassShape PassShape::prefill(int tokens) { return PassShape{{ChunkShape{0, tokens, true}}}; }

double PassCost::time_s() const {
  double t = graph_s;
  for (const KernelCost& k : kernels) t += k.time_s();
  return t;
}
double PassCost::bytes() const {
  double b = 0;
  for (const KernelCost& k : kernels) b += k.bytes();
  return b;
}
double PassCost::weight_bytes() const {
  double b = 0;
  for (const KernelCost& k : kernels) b += k.weight_bytes;
  return b;
}
double PassCost::flops() const {
  double f = 0;
  for (const KernelCost& k : kernels) f += k.flops;
  return f;
}
int PassCost::launches() const {
  int n = 0;
  for (const KernelCost& k : kernels) n += k.launches;
  return n;
}
const KernelCost& PassCost::kernel(const std::string& name) const {
  for (const KernelCost& k : kernels) {
    if (k.name == name) return k;
  }
  throw InvalidArgument("roofline: the pass has no kernel '" + name + "'");
}

PassCost pass_cost(const ModelConfig& c, const PassShape& shape, const Precision& p,
                   const Device& device, const Assumptions& a) {
  if (shape.chunks.empty()) throw InvalidArgument("roofline: a pass needs at least one chunk");
  for (const ChunkShape& ch : shape.chunks) {
    if (ch.num_tokens < 1 || ch.start_pos < 0) {
      throw InvalidArgument("roofline: a chunk needs >= 1 row at a position >= 0 (got " +
                            std::to_string(ch.num_tokens) + " rows at " +
                            std::to_string(ch.start_pos) + ")");
    }
  }
  const double T = static_cast<double>(shape.rows());
  const double S = static_cast<double>(shape.sampled_rows());
  const double d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), V = c.vocab_size;
  const double act = p.activation_bytes;
  const double bw = device.memory_bandwidth * a.bandwidth_fraction;
  const double gemm_peak = (p.tensor_cores ? device.tensor_flops : device.fp32_flops) * a.compute_fraction;
  const double simt_peak = device.fp32_flops * a.compute_fraction;  // elementwise work

  PassCost cost;
  cost.device = &device;
  // One kernel: its per-launch traffic and work, times `launches` (identical layers).
  const auto add = [&](const char* name, int launches, double weights, double kv_bytes,
                       double activations, double flops, bool gemm) {
    KernelCost k;
    k.name = name;
    k.launches = launches;
    k.weight_bytes = launches * weights;
    k.kv_bytes = launches * kv_bytes;
    k.activation_bytes = launches * activations;
    k.flops = launches * flops;
    k.memory_s = k.bytes() / bw;
    k.compute_s = k.flops / (gemm ? gemm_peak : simt_peak);
    k.launch_s = launches * (a.cuda_graph ? a.graph_node_s : a.launch_s);
    cost.kernels.push_back(k);
  };
  const int L = c.n_layers;

  // Attention over the cache: each chunk reads the K and V of every position it attends to
  // once (its query heads share them, GQA included); row at position p attends to p + 1 keys
  // (causal), 2 FLOPs per multiply-add in QKᵀ and in PV.
  double kv_read = 0, attn_flops = 0;
  for (const ChunkShape& ch : shape.chunks) {
    const double end = double(ch.start_pos) + ch.num_tokens;
    kv_read += end * 2 * kv * p.kv_bytes;
    const double keys = ch.num_tokens * double(ch.start_pos) + ch.num_tokens * (ch.num_tokens + 1) / 2.0;
    attn_flops += 4 * q * keys;
  }

  add("embedding", 1, T * d * p.dense_bytes, 0, T * d * act, 0, false);  // gather T rows
  // RMSNorm: read x and write x·w/rms; ~4 FLOPs per element (square, sum, scale, weight).
  add("attn_norm", L, d * p.dense_bytes, 0, 2 * T * d * act, 4 * T * d, false);
  if (a.fused) {
    // One GEMM over [Wq; Wk; Wv]: xn read once, q | k | v written.
    add("qkv_proj", L, p.linear_bytes(q + 2 * kv, d), 0, T * d * act + T * (q + 2 * kv) * act,
        2 * T * d * (q + 2 * kv), true);
    // RoPE on q and k (3 FLOPs per element: a 2x2 rotation per pair) on the way from the
    // projection's rows to the rotated q and to the cache (K and V in the KV type).
    add("rope_kv_append", L, 0, T * 2 * kv * p.kv_bytes, T * (q + 2 * kv) * act + T * q * act,
        3 * T * (q + kv), false);
  } else {
    // Three GEMMs, each reading xn; RoPE in place on q and k; the append reads k and v again.
    add("q_proj", L, p.linear_bytes(q, d), 0, T * d * act + T * q * act, 2 * T * d * q, true);
    add("k_proj", L, p.linear_bytes(kv, d), 0, T * d * act + T * kv * act, 2 * T * d * kv, true);
    add("v_proj", L, p.linear_bytes(kv, d), 0, T * d * act + T * kv * act, 2 * T * d * kv, true);
    add("rope", L, 0, 0, 2 * T * (q + kv) * act, 3 * T * (q + kv), false);
    add("kv_append", L, 0, T * 2 * kv * p.kv_bytes, T * 2 * kv * act, 0, false);
  }
  add("attention", L, 0, kv_read, 2 * T * q * act, attn_flops, true);
  // Output projection with the residual add in its epilogue (read x, write x + Wo·attn).
  add("o_proj", L, p.linear_bytes(d, q), 0, T * q * act + 2 * T * d * act, 2 * T * q * d + T * d,
      true);
  add("ffn_norm", L, d * p.dense_bytes, 0, 2 * T * d * act, 4 * T * d, false);
  if (a.fused) {
    // Gate and up as one GEMM, SwiGLU (silu(g)·u, ~5 FLOPs) in the epilogue: writes T × hidden.
    add("gate_up_proj", L, p.linear_bytes(2 * h, d), 0, T * d * act + T * h * act,
        4 * T * d * h + 5 * T * h, true);
  } else {
    // Two GEMMs writing gate and up, then SwiGLU reading both and writing h.
    add("gate_proj", L, p.linear_bytes(h, d), 0, T * d * act + T * h * act, 2 * T * d * h, true);
    add("up_proj", L, p.linear_bytes(h, d), 0, T * d * act + T * h * act, 2 * T * d * h, true);
    add("swiglu", L, 0, 0, 3 * T * h * act, 5 * T * h, false);
  }
  add("down_proj", L, p.linear_bytes(d, h), 0, T * h * act + 2 * T * d * act, 2 * T * h * d + T * d,
      true);
  // Only the rows that sample go through the final norm and the classifier (dense, as the
  // embedding); logits are fp32.
  add("final_norm", 1, d * p.dense_bytes, 0, 2 * S * d * act, 4 * S * d, false);
  add("lm_head", 1, V * d * p.dense_bytes, 0, S * d * act + S * V * 4, 2 * S * d * V, true);
  // Sampling on the device: read the logits once (a max / top-k pass, ~1 FLOP per logit)
  // and write one token id per row.
  add("sampling", 1, 0, 0, S * V * 4 + S * 4, S * V, false);
  if (a.cuda_graph) cost.graph_s = a.graph_launch_s;
  return cost;
}

std::string format_breakdown(const PassCost& cost) {
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "  %-15s %8s %11s %11s %9s %9s %9s  %s\n", "kernel", "launches",
                "MB moved", "GFLOP", "mem us", "math us", "total us", "bound");
  out += line;
  for (const KernelCost& k : cost.kernels) {
    std::snprintf(line, sizeof line, "  %-15s %8d %11.3f %11.3f %9.2f %9.2f %9.2f  %s\n",
                  k.name.c_str(), k.launches, k.bytes() / 1e6, k.flops / 1e9, 1e6 * k.memory_s,
                  1e6 * k.compute_s, 1e6 * k.time_s(), k.memory_bound() ? "memory" : "compute");
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-15s %8d %11.3f %11.3f %9s %9s %9.2f  (graph launch %.1f us)\n",
                "total", cost.launches(), cost.bytes() / 1e6, cost.flops() / 1e9, "", "",
                1e6 * cost.time_s(), 1e6 * cost.graph_s);
  out += line;
  return out;
}

}  // namespace nanoserve::roofline
