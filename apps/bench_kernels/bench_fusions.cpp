// The engine's fusions (kernels/README.md, "Fusions"), each as two rows on the same problem —
// `unfused` (the launches the engine made before) and `fused` (the one it makes now) — named
// like the roofline's kernels (common/roofline/pass_cost.h) so a measured row joins its modeled
// one:
//   qkv_proj        wq, wk, wv as three linears      vs  one linear over [Wq; Wk; Wv]
//   gate_up_proj    w1, w3 and swiglu v01            vs  one linear over [W1; W3], kSwiGLU
//   rope_kv_append  RoPE v01 in place + KV append    vs  RoPE v02 (rotate on the way to the cache)
// Shapes: Llama-3-8B (dim 4096, 32 query + 8 KV heads of 128, hidden 14336) in bf16 weights,
// activations and KV — the engine's GPU default — at 1 and 16 rows (decode, the GEMV side) and
// 512 (a prefill chunk, the tensor cores). `bytes` is what each variant moves (its
// intermediates included), so the GB/s columns are not comparable across the two rows: compare
// the times. On the simulator this is a smoke run whose timings are CPU timings.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/kv_append.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace nanoserve::bench {
namespace {

using T = __nv_bfloat16;  // weights, activations and KV
constexpr double kB = sizeof(T);

struct Shape {
  int dim, n_heads, n_kv_heads, head_dim, hidden;
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
};

BenchCase base(const char* kernel, bool fused, int rows, const std::string& shape) {
  BenchCase c;
  c.kernel = kernel;
  c.version = fused ? "fused" : "unfused";
  c.dtype = "bf16";
  c.shape = "m" + std::to_string(rows) + " " + shape;
  return c;
}

DeviceBuffer<T> filled(std::size_t n, unsigned salt) { return DeviceBuffer<T>(pattern<T>(n, salt)); }

// xn (rows, dim) through Wq, Wk, Wv: three launches writing q, k, v, or one over the stacked
// matrix writing each row's q | k | v.
BenchCase qkv_case(const Shape& s, int rows, bool fused) {
  const int n = s.q_dim() + 2 * s.kv_dim();
  BenchCase c = base("qkv_proj", fused, rows, dims({n, s.dim}));
  c.bytes = kB * (double(n) * s.dim + double(rows) * n + (fused ? 1 : 3) * double(rows) * s.dim);
  c.flops = 2.0 * rows * n * double(s.dim);
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<T> w, x, y;  // (n, dim), (rows, dim), (rows, n)
    };
    auto b = std::make_shared<Buffers>();
    b->w = filled(std::size_t(n) * s.dim, 1);
    b->x = filled(std::size_t(rows) * s.dim, 2);
    b->y = DeviceBuffer<T>(std::size_t(rows) * n);
    return [=](cudaStream_t st) {
      if (fused) {
        launch_linear<T, T, T>(b->w.get(), b->x.get(), b->y.get(), rows, n, s.dim, st);
        return;
      }
      const T* w = b->w.get();
      T* y = b->y.get();
      for (int part = 0, offset = 0; part < 3; ++part) {
        const int out = part == 0 ? s.q_dim() : s.kv_dim();
        launch_linear<T, T, T>(w + std::size_t(offset) * s.dim, b->x.get(),
                               y + std::size_t(offset) * rows, rows, out, s.dim, st);
        offset += out;
      }
    };
  };
  return c;
}

// xn (rows, dim) through W1 and W3 and SwiGLU: two linears writing gate and up, then swiglu v01
// reading both — or one linear over [W1; W3] with the SwiGLU epilogue writing h (rows, hidden).
BenchCase gate_up_case(const Shape& s, int rows, bool fused) {
  const int h = s.hidden;
  BenchCase c = base("gate_up_proj", fused, rows, dims({2 * h, s.dim}));
  const double act = fused ? double(rows) * (s.dim + h)  // xn read, h written
                           : double(rows) * (2.0 * s.dim + 2.0 * h + 3.0 * h);
  c.bytes = kB * (2.0 * h * s.dim + act);
  c.flops = 4.0 * rows * h * double(s.dim);
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<T> w, x, y, up;  // (2h, dim), (rows, dim), (rows, h) twice
    };
    auto b = std::make_shared<Buffers>();
    b->w = filled(std::size_t(2) * h * s.dim, 3);
    b->x = filled(std::size_t(rows) * s.dim, 4);
    b->y = DeviceBuffer<T>(std::size_t(rows) * h);
    b->up = DeviceBuffer<T>(std::size_t(rows) * h);
    return [=](cudaStream_t st) {
      if (fused) {
        launch_linear<T, T, T>(b->w.get(), b->x.get(), b->y.get(), rows, 2 * h, s.dim, st,
                               Epilogue::kSwiGLU);
        return;
      }
      launch_linear<T, T, T>(b->w.get(), b->x.get(), b->y.get(), rows, h, s.dim, st);
      launch_linear<T, T, T>(b->w.get() + std::size_t(h) * s.dim, b->x.get(), b->up.get(), rows,
                             h, s.dim, st);
      launch_swiglu<T>(b->y.get(), b->up.get(), std::int64_t(rows) * h, b->y.get(), st);
    };
  };
  return c;
}

// The rows' q | k | v (as the QKV projection leaves them) to rotated q and the cache: RoPE v01 in
// place on q and k, then the append reading k and v — or RoPE v02 on the way to the cache.
BenchCase rope_case(const Shape& s, int rows, bool fused) {
  const int q = s.q_dim(), kv = s.kv_dim(), width = q + 2 * kv;
  BenchCase c = base("rope_kv_append", fused, rows,
                     "(" + std::to_string(s.n_heads) + "+" + std::to_string(s.n_kv_heads) + ")x" +
                         std::to_string(s.head_dim));
  const double act = fused ? double(rows) * (width + q) : double(rows) * (2.0 * (q + kv) + 2.0 * kv);
  c.bytes = kB * (act + 2.0 * rows * kv) + 2.0 * rows * sizeof(int);  // + cache rows, ids
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<T> qkv, q_out, k_cache, v_cache;
      DeviceBuffer<int> positions, slots;
      std::vector<float> inv_freq;
    };
    auto b = std::make_shared<Buffers>();
    b->qkv = filled(std::size_t(rows) * width, 5);
    b->q_out = DeviceBuffer<T>(std::size_t(rows) * q);
    b->k_cache = DeviceBuffer<T>(std::size_t(rows) * kv);
    b->v_cache = DeviceBuffer<T>(std::size_t(rows) * kv);
    std::vector<int> ids(static_cast<std::size_t>(rows));
    for (int r = 0; r < rows; ++r) ids[std::size_t(r)] = 4096 - rows + r;  // late positions
    b->positions = DeviceBuffer<int>(ids);
    for (int r = 0; r < rows; ++r) ids[std::size_t(r)] = r;
    b->slots = DeviceBuffer<int>(ids);
    for (int i = 0; i < s.head_dim / 2; ++i) b->inv_freq.push_back(1.0f / float(1 << (i % 16)));
    return [=](cudaStream_t st) {
      T* qkv = b->qkv.get();
      if (fused) {
        launch_rope_kv_append<T, T>({qkv, qkv + q, qkv + q + kv, width, width}, b->positions.get(),
                                    rows, s.n_heads, s.n_kv_heads, s.head_dim,
                                    b->inv_freq.data(), RopePairing::kRotateHalf,
                                    b->q_out.get(),
                                    {b->k_cache.get(), b->v_cache.get(), b->slots.get(), rows},
                                    st);
        return;
      }
      // Unfused, q, k and v sit in buffers of their own (three projections): the first rows of
      // the same allocation stand in for them.
      T* qb = qkv;
      T* kb = qkv + std::size_t(rows) * q;
      T* vb = kb + std::size_t(rows) * kv;
      launch_rope<T>(qb, kb, b->positions.get(), rows, s.n_heads, s.n_kv_heads, s.head_dim,
                     b->inv_freq.data(), RopePairing::kRotateHalf, st);
      launch_kv_append<T, T>(kb, vb, b->slots.get(), rows, kv, b->k_cache.get(),
                             b->v_cache.get(), rows, st);
    };
  };
  return c;
}

const Shape& shape_for(const SuiteOptions& options) {
  static const Shape llama3_8b{4096, 32, 8, 128, 14336};
  static const Shape tiny{64, 4, 2, 16, 96};
  return options.quick ? tiny : llama3_8b;
}

// Both variants at each row count of `rows` (quick: a GEMV and a GEMM count).
template <typename Make>
std::vector<BenchCase> pairs(const SuiteOptions& options, std::vector<int> rows, Make make) {
  if (options.quick) rows = {3, 17};
  std::vector<BenchCase> cases;
  for (int m : rows) {
    for (bool fused : {false, true}) cases.push_back(make(shape_for(options), m, fused));
  }
  return cases;
}

std::vector<BenchCase> qkv_cases(const SuiteOptions& o) { return pairs(o, {1, 16, 512}, qkv_case); }
std::vector<BenchCase> gate_up_cases(const SuiteOptions& o) {
  return pairs(o, {1, 16, 512}, gate_up_case);
}
std::vector<BenchCase> rope_cases(const SuiteOptions& o) { return pairs(o, {1, 32, 512}, rope_case); }

const bool kQkv = register_suite("qkv_proj", 112, qkv_cases);
const bool kGateUp = register_suite("gate_up_proj", 113, gate_up_cases);
const bool kRope = register_suite("rope_kv_append", 114, rope_cases);

}  // namespace
}  // namespace nanoserve::bench
