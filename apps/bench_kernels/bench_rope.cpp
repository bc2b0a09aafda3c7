// RoPE, in place on the queries and keys of 1, 32 and 512 rows with Llama-3-8B's heads (32
// query + 8 KV heads of 128), in both pairing conventions: "adjacent" (llama2.c, GGUF) and
// "rot-half" (Hugging Face) differ only in which two floats of a head form a pair.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/rope.h"

namespace nanoserve::bench {
namespace {

BenchCase rope_case(RopePairing pairing, int rows, int n_heads, int n_kv_heads, int head_dim) {
  BenchCase c;
  c.kernel = "rope";
  c.version = pairing == RopePairing::kAdjacentPairs ? "adjacent" : "rot-half";
  c.dtype = "fp32";
  c.shape = std::to_string(rows) + "x(" + std::to_string(n_heads) + "+" +
            std::to_string(n_kv_heads) + ")x" + std::to_string(head_dim);
  // q and k read and written back once, the positions read.
  c.bytes = 2.0 * rows * (n_heads + n_kv_heads) * head_dim * sizeof(float) + rows * sizeof(int);
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<float> q;         // (rows, n_heads, head_dim)
      DeviceBuffer<float> k;         // (rows, n_kv_heads, head_dim)
      DeviceBuffer<int> positions;   // (rows)
    };
    auto b = std::make_shared<Buffers>();
    b->q = DeviceBuffer<float>(
        pattern<float>(static_cast<std::size_t>(rows) * n_heads * head_dim, 1));
    b->k = DeviceBuffer<float>(
        pattern<float>(static_cast<std::size_t>(rows) * n_kv_heads * head_dim, 2));
    // The last `rows` positions of a 4096-token context: real angles, up to thousands of
    // radians, as at the end of a long prompt.
    std::vector<int> positions(rows);
    for (int r = 0; r < rows; ++r) positions[r] = 4096 - rows + r;
    b->positions = DeviceBuffer<int>(positions);
    // Rotating in place every repetition keeps the values bounded: a rotation keeps norms.
    return [=](cudaStream_t s) {
      launch_rope(b->q.get(), b->k.get(), b->positions.get(), rows, n_heads, n_kv_heads, head_dim,
                  10000.0f, pairing, s);
    };
  };
  return c;
}

std::vector<BenchCase> rope_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  for (RopePairing pairing : {RopePairing::kAdjacentPairs, RopePairing::kRotateHalf}) {
    if (options.quick) {
      cases.push_back(rope_case(pairing, 3, 4, 2, 64));
      continue;
    }
    for (int rows : {1, 32, 512}) cases.push_back(rope_case(pairing, rows, 32, 8, 128));
  }
  return cases;
}

const bool kRegistered = register_suite("rope", 60, rope_cases);

}  // namespace
}  // namespace nanoserve::bench
