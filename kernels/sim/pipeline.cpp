// Async copies (kernels/sim/pipeline.h): each simulated thread's pipeline is a list of pending
// copies and a queue of committed batches, kept per OS thread for the block it runs.
#include "kernels/sim/pipeline.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "kernels/sim/block_scheduler.h"
#include "kernels/sim/device_memory.h"
#include "kernels/sim/racecheck.h"

namespace nanoserve::sim {
namespace {

constexpr unsigned char kPoison = 0xff;
// __pipeline_wait_prior(n) with n > 8 waits as for 8, as in cuda_pipeline_primitives.h.
constexpr std::size_t kMaxPrior = 8;

struct AsyncCopy {
  unsigned char* dst;
  std::size_t size;
  unsigned char data[16];  // the source bytes as they were when the copy was issued
  Site site;
};

struct ThreadPipeline {
  std::vector<AsyncCopy> pending;              // issued since the last commit
  std::deque<std::vector<AsyncCopy>> batches;  // committed, oldest first
};

struct BlockPipelines {
  std::uint64_t block_serial = 0;
  std::vector<ThreadPipeline> threads;
};

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

BlockScheduler& scheduler(const char* api) {
  BlockScheduler* s = BlockScheduler::active();
  if (s == nullptr) {
    std::fprintf(stderr, "%s called outside a kernel\n", api);
    std::abort();
  }
  return *s;
}

// The calling simulated thread's pipeline (state of an earlier block is dropped: copies a
// thread never waited for never became visible).
ThreadPipeline& pipeline_of_current(BlockScheduler& s) {
  thread_local BlockPipelines block;
  if (block.block_serial != s.block_serial()) {
    block.block_serial = s.block_serial();
    block.threads.assign(s.num_threads(), ThreadPipeline{});
  }
  return block.threads[s.current().linear];
}

[[noreturn]] void misuse(BlockScheduler& s, Site site, const std::string& what) {
  s.kernel_fault("thread " + format_index(s.current().idx) + ": __pipeline_memcpy_async at " +
                 format_site(site) + ": " + what);
}

// Writes a completed copy into shared memory, after checking nobody wrote there meanwhile.
void complete(BlockScheduler& s, const AsyncCopy& c, Site wait_site) {
  for (std::size_t i = 0; i < c.size; ++i) {
    if (c.dst[i] != kPoison) {
      s.kernel_fault("thread " + format_index(s.current().idx) +
                     ": the destination of the async copy issued at " + format_site(c.site) + " (" +
                     hex(c.dst) + ") was written before __pipeline_wait_prior (" +
                     format_site(wait_site) + ") completed it");
    }
  }
  std::memcpy(c.dst, c.data, c.size);
  race_async_complete(c.dst, c.size, wait_site);
}

}  // namespace

void pipeline_memcpy_async(void* dst, const void* src, std::size_t size, std::size_t zfill,
                           Site site) {
  BlockScheduler& s = scheduler("__pipeline_memcpy_async");
  if (size != 4 && size != 8 && size != 16) {
    misuse(s, site, "size_and_align " + std::to_string(size) + " must be 4, 8 or 16");
  }
  if (zfill > size) {
    misuse(s, site,
           "zfill " + std::to_string(zfill) + " exceeds size_and_align " + std::to_string(size));
  }
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto g = reinterpret_cast<std::uintptr_t>(src);
  if (d % size != 0 || g % size != 0) {
    misuse(s, site,
           "destination " + hex(dst) + " and source " + hex(src) + " must both be aligned to " +
               std::to_string(size) + " bytes");
  }
  const std::size_t read = size - zfill;
  const MemoryRegion region = find_region(MemoryKind::kDevice, src);
  if (!region.found || g + read > region.base + region.size) {
    misuse(s, site,
           "source " + hex(src) + " (" + std::to_string(read) +
               " bytes) is not inside a cudaMalloc allocation (global memory)");
  }
  if (find_region(MemoryKind::kDevice, dst).found) {
    misuse(s, site, "destination " + hex(dst) + " is global memory; it must be shared memory");
  }
  AsyncCopy copy{static_cast<unsigned char*>(dst), size, {}, site};
  std::memcpy(copy.data, src, read);
  std::memset(copy.data + read, 0, size - read);
  std::memset(dst, kPoison, size);  // undefined until the wait
  race_async_issue(dst, size, site);
  pipeline_of_current(s).pending.push_back(copy);
}

void pipeline_commit(Site) {
  BlockScheduler& s = scheduler("__pipeline_commit");
  ThreadPipeline& p = pipeline_of_current(s);
  p.batches.push_back(std::move(p.pending));  // an empty batch is legal, as on a GPU
  p.pending.clear();
}

void pipeline_wait_prior(std::size_t prior, Site site) {
  BlockScheduler& s = scheduler("__pipeline_wait_prior");
  ThreadPipeline& p = pipeline_of_current(s);
  if (prior > kMaxPrior) prior = kMaxPrior;
  while (p.batches.size() > prior) {
    for (const AsyncCopy& c : p.batches.front()) complete(s, c, site);
    p.batches.pop_front();
  }
}

}  // namespace nanoserve::sim
