// Registry of simulated device and pinned host allocations.
#include "kernels/sim/device_memory.h"

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
};

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
  // posix_memalign, unlike aligned_alloc, does not round the size up to the alignment: the
  // byte after the allocation is ASan's redzone, so an off-by-one kernel is caught.
  if (posix_memalign(&ptr, 256, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  std::memset(ptr, 0xff, bytes);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[reinterpret_cast<std::uintptr_t>(ptr)] = Allocation{bytes, kind};
  if (kind == MemoryKind::kDevice) r.device_bytes += bytes;
  return ptr;
}

bool release(MemoryKind kind, void* ptr) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.live.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == r.live.end() || it->second.kind != kind) return false;
    if (kind == MemoryKind::kDevice) r.device_bytes -= it->second.size;
    r.live.erase(it);
  }
  std::free(ptr);
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
