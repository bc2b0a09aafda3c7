// Warp intrinsics as a rendezvous of the participating lanes; the last to arrive computes all.
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "kernels/sim/block_scheduler.h"
#include "kernels/sim/racecheck.h"

namespace nanoserve::sim {
namespace {

bool same_site(Site a, Site b) {
  return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

bool is_shuffle(WarpOp op) {
  return op == WarpOp::kShflIdx || op == WarpOp::kShflUp || op == WarpOp::kShflDown ||
         op == WarpOp::kShflXor;
}

std::string hex(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

// The lane a shuffle reads, per the CUDA programming guide; the own lane where the guide says
// the caller keeps its value. `width` is a power of two in [1, 32].
unsigned source_lane(WarpOp op, unsigned lane, int lane_arg, unsigned width) {
  const unsigned segment = lane & ~(width - 1);
  const unsigned offset = lane - segment;
  const auto arg = static_cast<unsigned>(lane_arg);
  switch (op) {
    case WarpOp::kShflIdx:  // srcLane modulo width, within the caller's segment
      return segment + (arg & (width - 1));
    case WarpOp::kShflUp:  // lanes below delta keep their value
      return arg <= offset ? lane - arg : lane;
    case WarpOp::kShflDown:  // lanes whose source would leave the segment keep theirs
      return arg < width - offset ? lane + arg : lane;
    case WarpOp::kShflXor: {  // earlier segments may be read, later ones give the own value
      const unsigned src = lane ^ arg;
      return src < segment + width ? src : lane;
    }
    default: return lane;
  }
}

}  // namespace

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kSync: return "__syncwarp";
    case WarpOp::kShflIdx: return "__shfl_sync";
    case WarpOp::kShflUp: return "__shfl_up_sync";
    case WarpOp::kShflDown: return "__shfl_down_sync";
    case WarpOp::kShflXor: return "__shfl_xor_sync";
    case WarpOp::kBallot: return "__ballot_sync";
    case WarpOp::kAny: return "__any_sync";
    case WarpOp::kAll: return "__all_sync";
    case WarpOp::kWmma: return "a wmma::*_sync function";
  }
  return "?";
}

std::uint64_t BlockScheduler::warp_op(WarpOp op, unsigned mask, std::uint64_t value, int lane_arg,
                                      int width, Site site) {
  SimThread& thread = *current_;
  if (aborting_) return 0;  // only reachable from destructors during an unwind
  const unsigned warp_index = thread.linear / 32;
  const unsigned lane = thread.linear % 32;
  const auto who = [&] {  // built only on the error paths: warp operations are hot
    return "thread " + format_index(thread.idx) + " (warp " + std::to_string(warp_index) +
           ", lane " + std::to_string(lane) + ") in " + warp_op_name(op) + " (" +
           format_site(site) + ")";
  };
  if ((mask & (1u << lane)) == 0) {
    fail_and_leave(who() + " passes mask " + hex(mask) + ", which does not include its own lane");
  }
  if (is_shuffle(op) && (width < 1 || width > 32 || (width & (width - 1)) != 0)) {
    fail_and_leave(who() + " passes width " + std::to_string(width) +
                   ", which is not a power of two in [1, 32]");
  }
  WarpState& warp = warps_[warp_index];
  std::size_t group_index = warp.groups.size();
  for (std::size_t g = 0; g < warp.groups.size(); ++g) {
    const WarpGroup& group = warp.groups[g];
    if (group.mask == mask) {
      group_index = g;
    } else if ((group.mask & mask) != 0) {
      fail_and_leave(who() + " passes mask " + hex(mask) + " but lanes " + hex(group.arrived) +
                     " wait in " + warp_op_name(group.op) + " (" + format_site(group.site) +
                     ") with mask " + hex(group.mask) + "; all lanes must pass the same mask");
    }
  }
  if (group_index == warp.groups.size()) {
    warp.groups.push_back(WarpGroup{mask, 0, op, site});
  } else {
    const WarpGroup& group = warp.groups[group_index];
    if (group.op != op || !same_site(group.site, site)) {
      fail_and_leave(who() + " but lanes " + hex(group.arrived) + " of the same mask wait in " +
                     warp_op_name(group.op) + " (" + format_site(group.site) +
                     "); a warp operation must not sit in divergent code");
    }
  }
  thread.wait = WaitKind::kWarp;
  thread.warp_op = op;
  thread.site = site;
  thread.mask = mask;
  thread.value = value;
  thread.src_lane = static_cast<int>(source_lane(op, lane, lane_arg, static_cast<unsigned>(width)));
  WarpGroup& group = warp.groups[group_index];
  group.arrived |= 1u << lane;
  if (group.arrived == (group.mask & warp.live)) {
    complete_group(warp, group_index);
  } else {
    wait_current(thread);
  }
  return thread.result;
}

void BlockScheduler::complete_group(WarpState& warp, std::size_t group_index) {
  const WarpGroup group = warp.groups[group_index];
  warp.groups.erase(warp.groups.begin() + static_cast<std::ptrdiff_t>(group_index));
  const unsigned participants = group.arrived;
  const unsigned base = static_cast<unsigned>(&warp - warps_.data()) * 32;
  race_warp_sync(base / 32, participants);  // a no-op unless the race checker runs this block
  unsigned ballot = 0;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if ((participants >> lane) & 1u) ballot |= (threads_[base + lane].value != 0 ? 1u : 0u) << lane;
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (((participants >> lane) & 1u) == 0) continue;
    SimThread& member = threads_[base + lane];
    switch (group.op) {
      case WarpOp::kSync: member.result = 0; break;
      case WarpOp::kBallot:
      case WarpOp::kWmma: member.result = ballot; break;
      case WarpOp::kAny: member.result = ballot != 0 ? 1 : 0; break;
      case WarpOp::kAll: member.result = ballot == participants ? 1 : 0; break;
      default: {  // shuffles: a lane outside the rendezvous has no value to give (0xFF bytes)
        const auto src = static_cast<unsigned>(member.src_lane);
        member.result = ((participants >> src) & 1u) ? threads_[base + src].value : ~0ull;
      }
    }
    member.wait = WaitKind::kNone;
    if (&member != current_) make_runnable(member);
  }
}

void BlockScheduler::complete_ready_groups(WarpState& warp) {
  // Called when a lane exits: groups that were waiting only for it can now complete.
  for (std::size_t g = 0; g < warp.groups.size();) {
    const WarpGroup& group = warp.groups[g];
    if (group.arrived != 0 && group.arrived == (group.mask & warp.live)) {
      complete_group(warp, g);  // erases group g
    } else {
      ++g;
    }
  }
}

std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int lane_arg, int width,
                      Site site) {
  BlockScheduler* scheduler = BlockScheduler::active();
  if (scheduler == nullptr) {
    throw std::logic_error(std::string(warp_op_name(op)) + " called outside a kernel at " +
                           format_site(site));
  }
  return scheduler->warp_op(op, mask, value, lane_arg, width, site);
}

}  // namespace nanoserve::sim
