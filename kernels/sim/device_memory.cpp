// Registry of simulated device and pinned host allocations.
#include "kernels/sim/device_memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace nanoserve::sim {
namespace {

struct Allocation {
  std::size_t size;
  MemoryKind kind;
  bool mapped;  // from mmap (returned with munmap), else posix_memalign
};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Device allocations from this size on are mapped pages of their own, so that freeing one gives
// its memory back to the system at once, as cudaFree gives it back to the GPU. From malloc, a
// freed block stays in the process's heap (glibc raises its mmap threshold after each large
// free), and a process that allocates and frees device buffers — stacking a model's projections
// at load — would grow its resident memory by hundreds of MB that a GPU never costs the host.
// Not under ASan, which needs malloc's redzones to catch a kernel writing past the end.
constexpr std::size_t kMappedFrom = std::size_t(1) << 20;

struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Allocation> live;  // by start address
  std::size_t device_bytes = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void* allocate(MemoryKind kind, std::size_t bytes) {
  void* ptr = nullptr;
  const bool mapped = kind == MemoryKind::kDevice && bytes >= kMappedFrom && !kAddressSanitizer;
  if (mapped) {
    ptr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) return nullptr;  // page-aligned: more than cudaMalloc's 256 bytes
  } else if (posix_memalign(&ptr, 256, bytes == 0 ? 1 : bytes) != 0) {
    // posix_memalign, unlike aligned_alloc, does not round the size up to the alignment: the
    // byte after the allocation is ASan's redzone, so an off-by-one kernel is caught.
    return nullptr;
  }
  std::memset(ptr, 0xff, bytes);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[reinterpret_cast<std::uintptr_t>(ptr)] = Allocation{bytes, kind, mapped};
  if (kind == MemoryKind::kDevice) r.device_bytes += bytes;
  return ptr;
}

bool release(MemoryKind kind, void* ptr) {
  Registry& r = registry();
  Allocation a{};
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.live.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == r.live.end() || it->second.kind != kind) return false;
    if (kind == MemoryKind::kDevice) r.device_bytes -= it->second.size;
    a = it->second;
    r.live.erase(it);
  }
  if (a.mapped) {
    munmap(ptr, a.size);
  } else {
    std::free(ptr);
  }
  return true;
}

MemoryRegion find_region(MemoryKind kind, const void* ptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.upper_bound(address);
  if (it == r.live.begin()) return {};
  --it;
  const std::size_t size = it->second.size == 0 ? 1 : it->second.size;
  if (it->second.kind != kind || address - it->first >= size) return {};
  return MemoryRegion{true, it->first, it->second.size};
}

std::size_t device_bytes_in_use() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.device_bytes;
}

}  // namespace nanoserve::sim
