// The shared-memory race checker (kernels/sim/racecheck.h): per-byte shadow of the running
// block's shared memory, barrier epochs, warp-sync events, and the report of the first race.
#include "kernels/sim/racecheck.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/sim/block_scheduler.h"
#include "kernels/sim/elf_symbols.h"

namespace nanoserve::sim {
namespace {

std::atomic<bool> g_enabled{false};

struct Access {
  std::uint32_t epoch = 0;   // barrier epoch of the access (0: none)
  std::uint32_t gen = 0;     // warp-sync events completed in the block before the access
  std::uint32_t thread = 0;  // linear thread index
  bool write = false;
  const void* pc = nullptr;  // return address into instrumented code, or
  Site site{nullptr, 0};     // the call site of an async copy
};

struct ByteShadow {
  Access writer;
  Access readers[2];                // the last two distinct readers since the last write
  std::uint32_t pending = 0;        // 1 + index of an async copy in flight into this byte
  std::uint32_t pending_block = 0;  // the block that `pending` belongs to
  bool ignored = false;             // a GCC guard byte of a local `static thread_local`
};

struct WarpEvent {
  std::uint32_t id;
  unsigned mask;
};

struct PendingCopy {
  std::uint32_t thread;
  Site site;
};

struct RaceBlock {
  const void* kernel = nullptr;
  std::uint32_t epoch = 0;
  std::uint32_t block_id = 0;
  std::uint32_t events = 0;
  std::vector<std::vector<WarpEvent>> warp_events;
  std::vector<PendingCopy> pending;
  std::uintptr_t dyn_lo = 0;
  std::size_t dyn_size = 0;
  std::vector<ByteShadow> dyn;
  std::uintptr_t tls_lo = 0;
  std::size_t tls_size = 0;
  std::vector<ByteShadow> tls;
  std::string error;
};

thread_local RaceBlock* tl_block = nullptr;  // non-null while a checked block runs here

std::string hex(std::uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%lx", static_cast<unsigned long>(value));
  return text;
}

// The main executable's static TLS block on this OS thread (x86-64: it ends at the thread
// pointer), where every `__shared__` variable — a `static thread_local` — lives.
struct TlsSegment {
  std::size_t memsz = 0;
  std::size_t align = 1;
};

int find_tls(dl_phdr_info* info, std::size_t, void* data) {
  auto* tls = static_cast<TlsSegment*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_TLS) {
      tls->memsz = info->dlpi_phdr[i].p_memsz;
      tls->align = info->dlpi_phdr[i].p_align ? info->dlpi_phdr[i].p_align : 1;
    }
  }
  return 1;  // the first object is the executable
}

void locate_tls(RaceBlock& b) {
#if defined(__x86_64__)
  TlsSegment tls;
  dl_iterate_phdr(&find_tls, &tls);
  std::uintptr_t tp = 0;
  asm("mov %%fs:0, %0" : "=r"(tp));
  // The block is the segment rounded up to its alignment right below the thread pointer; one
  // alignment unit more covers the padding glibc may put in front.
  const std::size_t span = (tls.memsz + tls.align - 1) / tls.align * tls.align + tls.align;
  const auto probe = reinterpret_cast<std::uintptr_t>(&threadIdx);
  if (tls.memsz > 0 && probe >= tp - span && probe < tp) {
    b.tls_lo = tp - span;
    b.tls_size = span;
    b.tls.assign(span, ByteShadow{});
    // Not shared memory although it lies in the block: the guard bytes GCC puts beside
    // `__shared__` arrays of class type (`__half`), set by the first thread that reaches the
    // declaration and read by the others (kernels/sim/elf_symbols.h).
    for (const AddressRange& g : tls_guard_ranges()) {
      for (std::uintptr_t a = g.begin; a < g.end; ++a) {
        if (a - b.tls_lo < b.tls_size) b.tls[a - b.tls_lo].ignored = true;
      }
    }
    return;
  }
#endif
  std::fprintf(stderr,
               "racecheck: cannot locate static shared memory (the TLS block); only dynamic "
               "shared memory is checked\n");
  b.tls_size = 0;
}

RaceBlock& block_state() {
  thread_local std::unique_ptr<RaceBlock> state;
  if (!state) {
    state = std::make_unique<RaceBlock>();
    locate_tls(*state);
  }
  return *state;
}

// addr2line's answer for `address` in the object containing it: the function (demangled) if
// `function`, else "file:line" without directories; empty if it has no answer.
std::string addr2line(std::uintptr_t address, bool function) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(address), &info) == 0) return {};
  const std::uintptr_t offset = address - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  // "/proc/self/exe" would name addr2line itself in the child: resolve it here.
  char self[4096] = {0};
  if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) self[0] = '\0';
  for (const char* object : {static_cast<const char*>(self), info.dli_fname}) {
    if (object == nullptr || *object == '\0') continue;
    const std::string command = std::string("addr2line -C -f -e '") + object + "' " +
                                hex(offset) + " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) continue;
    char name[4096] = {0};
    char line[4096] = {0};
    const bool got = std::fgets(name, sizeof name, pipe) != nullptr &&
                     std::fgets(line, sizeof line, pipe) != nullptr;
    pclose(pipe);
    if (!got) continue;
    std::string text(function ? name : line);
    text.erase(text.find_last_not_of('\n') + 1);
    if (!function) {
      const std::size_t cut = text.find(' ');  // " (discriminator N)"
      if (cut != std::string::npos) text.resize(cut);
      const std::size_t slash = text.find_last_of('/');
      if (slash != std::string::npos) text = text.substr(slash + 1);
    }
    if (text.empty() || text[0] == '?') continue;
    return text;
  }
  return {};
}

std::string kernel_name(const void* kernel) {
  const auto address = reinterpret_cast<std::uintptr_t>(kernel);
  const std::string name = addr2line(address, true);
  return name.empty() ? "the kernel at " + hex(address) : name;
}

// The source line of the instruction before return address `pc`.
std::string source_line(const void* pc) {
  const auto address = reinterpret_cast<std::uintptr_t>(pc);
  const std::string line = addr2line(address - 1, false);
  return line.empty() ? hex(address) + " (no line information)" : line;
}

std::string where(const Access& a) {
  return a.site.file != nullptr ? format_site(a.site) : source_line(a.pc);
}

std::string thread_name(std::uint32_t linear) {
  const unsigned bx = blockDim.x, by = blockDim.y;
  return "thread " + format_index(uint3{linear % bx, (linear / bx) % by, linear / (bx * by)});
}

bool ordered_by_warp_sync(const RaceBlock& b, const Access& earlier, std::uint32_t now_thread) {
  if (earlier.thread / 32 != now_thread / 32) return false;
  const unsigned lanes = (1u << (earlier.thread % 32)) | (1u << (now_thread % 32));
  for (const WarpEvent& e : b.warp_events[now_thread / 32]) {
    if (e.id > earlier.gen && (e.mask & lanes) == lanes) return true;
  }
  return false;
}

bool conflicts(const RaceBlock& b, const Access& earlier, std::uint32_t thread) {
  return earlier.epoch == b.epoch && earlier.thread != thread &&
         !ordered_by_warp_sync(b, earlier, thread);
}

void report(RaceBlock& b, std::uintptr_t address, const std::string& what) {
  if (!b.error.empty()) return;  // the first race of the block is the one reported
  std::string place;
  if (address - b.dyn_lo < b.dyn_size) {
    place = "dynamic shared memory offset " + std::to_string(address - b.dyn_lo);
  } else {
    place = "static __shared__ memory at " + hex(address);
  }
  b.error = "shared-memory race in " + kernel_name(b.kernel) + " at " + place + ": " + what;
}

void describe_conflict(RaceBlock& b, std::uintptr_t address, const Access& earlier,
                       const Access& now) {
  if (!b.error.empty()) return;  // symbolizing is slow: only for the race that is reported
  const bool same_warp = earlier.thread / 32 == now.thread / 32;
  report(b, address,
         thread_name(earlier.thread) + (earlier.write ? " writes" : " reads") + " at " +
             where(earlier) + ", then " + thread_name(now.thread) +
             (now.write ? " writes" : " reads") + " at " + where(now) + " with no " +
             (same_warp ? "__syncwarp (or other warp-synchronizing operation of both lanes) "
                          "or __syncthreads"
                        : "__syncthreads") +
             " in between");
}

void check_byte(RaceBlock& b, ByteShadow& s, std::uintptr_t address, const Access& now) {
  if (s.pending != 0 && s.pending_block == b.block_id) {
    if (!b.error.empty()) return;
    const PendingCopy& copy = b.pending[s.pending - 1];
    report(b, address,
           thread_name(now.thread) + (now.write ? " writes" : " reads") + " at " + where(now) +
               " the destination of the async copy " + thread_name(copy.thread) + " issued at " +
               format_site(copy.site) + " before __pipeline_wait_prior completed it");
    return;
  }
  if (conflicts(b, s.writer, now.thread)) describe_conflict(b, address, s.writer, now);
  if (now.write) {
    for (const Access& r : s.readers) {
      if (conflicts(b, r, now.thread)) describe_conflict(b, address, r, now);
    }
    s.writer = now;
    s.readers[0] = s.readers[1] = Access{};
    return;
  }
  if (s.readers[0].thread == now.thread && s.readers[0].epoch != 0) {
    s.readers[0] = now;
  } else {
    s.readers[1] = s.readers[0];
    s.readers[0] = now;
  }
}

// The shadow of `address` if it is shared memory of the running block, else null.
ByteShadow* shadow_of(RaceBlock& b, std::uintptr_t address) {
  if (address - b.dyn_lo < b.dyn_size) return &b.dyn[address - b.dyn_lo];
  if (address - b.tls_lo < b.tls_size) {
    ByteShadow* s = &b.tls[address - b.tls_lo];
    return s->ignored ? nullptr : s;
  }
  return nullptr;
}

std::uint32_t current_thread() { return BlockScheduler::active()->current().linear; }

}  // namespace

bool racecheck_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void racecheck_enable() { g_enabled.store(true, std::memory_order_relaxed); }

void race_block_begin(const void* kernel, unsigned num_threads, unsigned char* smem,
                      std::size_t smem_bytes) {
  RaceBlock& b = block_state();
  b.kernel = kernel;
  ++b.epoch;
  ++b.block_id;
  b.events = 0;
  b.warp_events.assign((num_threads + 31) / 32, {});
  b.pending.clear();
  b.dyn_lo = reinterpret_cast<std::uintptr_t>(smem);
  b.dyn_size = smem_bytes;
  if (b.dyn.size() < smem_bytes) b.dyn.resize(smem_bytes);
  b.error.clear();
  tl_block = &b;
}

void race_barrier() {
  RaceBlock* b = tl_block;
  if (b == nullptr) return;
  ++b->epoch;
  for (auto& events : b->warp_events) events.clear();
}

void race_warp_sync(unsigned warp, unsigned mask) {
  RaceBlock* b = tl_block;
  if (b == nullptr || warp >= b->warp_events.size()) return;
  b->warp_events[warp].push_back(WarpEvent{++b->events, mask});
}

std::string race_block_end() {
  RaceBlock* b = tl_block;
  tl_block = nullptr;
  return b == nullptr ? std::string() : b->error;
}

void race_access(const void* addr, std::size_t size, bool write, const void* pc) {
  RaceBlock* b = tl_block;
  if (b == nullptr || !b->error.empty()) return;  // one race per block is reported
  const auto base = reinterpret_cast<std::uintptr_t>(addr);
  if (shadow_of(*b, base) == nullptr && shadow_of(*b, base + size - 1) == nullptr) return;
  const Access now{b->epoch, b->events, current_thread(), write, pc, {nullptr, 0}};
  for (std::size_t i = 0; i < size; ++i) {
    if (ByteShadow* s = shadow_of(*b, base + i)) check_byte(*b, *s, base + i, now);
  }
}

void race_async_issue(const void* dst, std::size_t size, Site site) {
  RaceBlock* b = tl_block;
  if (b == nullptr) return;
  const auto base = reinterpret_cast<std::uintptr_t>(dst);
  const std::uint32_t thread = current_thread();
  const Access now{b->epoch, b->events, thread, true, nullptr, site};
  b->pending.push_back(PendingCopy{thread, site});
  const auto index = static_cast<std::uint32_t>(b->pending.size());
  for (std::size_t i = 0; i < size; ++i) {
    ByteShadow* s = shadow_of(*b, base + i);
    if (s == nullptr) continue;
    check_byte(*b, *s, base + i, now);  // the copy may land at once: it is a write
    s->pending = index;
    s->pending_block = b->block_id;
  }
}

void race_async_complete(const void* dst, std::size_t size, Site site) {
  RaceBlock* b = tl_block;
  if (b == nullptr) return;
  const auto base = reinterpret_cast<std::uintptr_t>(dst);
  const Access now{b->epoch, b->events, current_thread(), true, nullptr, site};
  for (std::size_t i = 0; i < size; ++i) {
    ByteShadow* s = shadow_of(*b, base + i);
    if (s == nullptr) continue;
    s->pending = 0;
    s->writer = now;
    s->readers[0] = s->readers[1] = Access{};
  }
}

}  // namespace nanoserve::sim
