// The rendezvous and checks behind the simulator's nvcuda::wmma (kernels/sim/wmma.h).
#include "kernels/sim/wmma.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace nanoserve::sim {
namespace {

constexpr int kMaxWarps = 32;  // 1024 threads per block

// Per OS thread, i.e. per running block (fibers of a block never change OS thread): what each
// lane of each warp brought to its current WMMA call. Written by a lane before the first
// rendezvous, read by the others between the two.
thread_local const void* tl_lane_data[kMaxWarps][32];
thread_local std::uint64_t tl_lane_args[kMaxWarps][32];
// Calls each lane has entered (never reset, so consecutive calls of a warp differ), and the call
// whose shared result a lane of the warp has claimed; the call is named by lane 0's count, which
// every lane reads the same between the two rendezvous.
thread_local std::uint64_t tl_lane_calls[kMaxWarps][32];
thread_local std::uint64_t tl_claimed_call[kMaxWarps];
// The warp's result tile, written by the claiming lane and read by the others between the two
// rendezvous. On the heap, not in the static TLS block: the race checker watches that block as
// `__shared__` memory, and this memory is the simulator's, not the kernel's.
float* warp_scratch(int warp) {
  thread_local const std::unique_ptr<float[]> scratch(new float[kMaxWarps * 256]);
  return scratch.get() + warp * 256;
}

WmmaMapping mapping_from_env() {
  const char* text = std::getenv("NANOSERVE_SIM_WMMA_MAPPING");
  if (text == nullptr || *text == '\0' || std::strcmp(text, "linear") == 0) {
    return WmmaMapping::kLinear;
  }
  if (std::strcmp(text, "permuted") == 0) return WmmaMapping::kPermuted;
  std::fprintf(stderr, "NANOSERVE_SIM_WMMA_MAPPING='%s': expected linear or permuted\n", text);
  std::abort();  // a typo in a CI variable must not silently run the default
}

std::atomic<WmmaMapping>& mapping_state() {
  static std::atomic<WmmaMapping> state{mapping_from_env()};
  return state;
}

unsigned warp_of_current_thread() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32u;
}

std::string describe(const WmmaCall& call) {
  return std::string(call.name) + " (" + call.site.file + ":" + std::to_string(call.site.line) +
         ") in warp " + std::to_string(warp_of_current_thread());
}

std::string hex(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

}  // namespace

WmmaMapping wmma_mapping() { return mapping_state().load(std::memory_order_relaxed); }

void set_wmma_mapping(WmmaMapping mapping) {
  mapping_state().store(mapping, std::memory_order_relaxed);
}

void wmma_fail(const WmmaCall& call, const char* what) {
  throw std::runtime_error(describe(call) + " " + what);
}

const void* const* wmma_enter(const WmmaCall& call) {
  const unsigned warp = warp_of_current_thread();
  const int lane = wmma_lane();
  tl_lane_data[warp][lane] = call.lane_data;
  tl_lane_args[warp][lane] = call.args;
  ++tl_lane_calls[warp][lane];
  const auto lanes = static_cast<unsigned>(warp_op(WarpOp::kWmma, 0xffffffffu, 1, 0, 32, call.site));
  if (lanes != 0xffffffffu) {
    throw std::runtime_error(describe(call) + " needs all 32 lanes of the warp, but only lanes " +
                             hex(lanes) +
                             " take part (a partial warp, or lanes that returned early)");
  }
  for (int other = 0; other < 32; ++other) {
    if (tl_lane_args[warp][other] != call.args) {
      throw std::runtime_error(describe(call) + ": lanes " + std::to_string(lane) + " and " +
                               std::to_string(other) +
                               " pass different arguments (pointer, ldm or layout); all lanes "
                               "must pass the same");
    }
  }
  return tl_lane_data[warp];
}

bool wmma_claim() {
  const unsigned warp = warp_of_current_thread();
  const std::uint64_t call = tl_lane_calls[warp][0];
  if (tl_claimed_call[warp] == call) return false;
  tl_claimed_call[warp] = call;
  return true;
}

float* wmma_warp_scratch() { return warp_scratch(warp_of_current_thread()); }

void wmma_leave(const WmmaCall& call) {
  warp_op(WarpOp::kWmma, 0xffffffffu, 1, 0, 32, call.site);
}

}  // namespace nanoserve::sim
