// The ThreadSanitizer entry points GCC's -fsanitize=thread instrumentation calls, defined here
// instead of by libtsan (which is not linked): plain accesses go to the race checker
// (kernels/sim/racecheck.h), atomics are performed (as sequentially consistent CPU atomics),
// function entry/exit and vptr updates are ignored. Only binaries with instrumented objects
// reference these symbols, so only they pull this file out of the simulator library.
#include <cstddef>
#include <cstdint>

#include "kernels/sim/racecheck.h"

namespace sim = nanoserve::sim;

#define NS_TSAN_ACCESS(n)                                                            \
  extern "C" void __tsan_read##n(void* addr) {                                      \
    sim::race_access(addr, n, false, __builtin_return_address(0));                  \
  }                                                                                 \
  extern "C" void __tsan_write##n(void* addr) {                                     \
    sim::race_access(addr, n, true, __builtin_return_address(0));                   \
  }                                                                                 \
  extern "C" void __tsan_unaligned_read##n(void* addr) {                            \
    sim::race_access(addr, n, false, __builtin_return_address(0));                  \
  }                                                                                 \
  extern "C" void __tsan_unaligned_write##n(void* addr) {                           \
    sim::race_access(addr, n, true, __builtin_return_address(0));                   \
  }                                                                                 \
  extern "C" void __tsan_volatile_read##n(void* addr) {                             \
    sim::race_access(addr, n, false, __builtin_return_address(0));                  \
  }                                                                                 \
  extern "C" void __tsan_volatile_write##n(void* addr) {                            \
    sim::race_access(addr, n, true, __builtin_return_address(0));                   \
  }

NS_TSAN_ACCESS(1)
NS_TSAN_ACCESS(2)
NS_TSAN_ACCESS(4)
NS_TSAN_ACCESS(8)
NS_TSAN_ACCESS(16)
#undef NS_TSAN_ACCESS

extern "C" void __tsan_read_range(void* addr, std::size_t size) {
  sim::race_access(addr, size, false, __builtin_return_address(0));
}
extern "C" void __tsan_write_range(void* addr, std::size_t size) {
  sim::race_access(addr, size, true, __builtin_return_address(0));
}
extern "C" void __tsan_init() { sim::racecheck_enable(); }
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}

// Atomics: GCC replaces every __atomic builtin in instrumented code by one of these. The memory
// order argument is ignored: sequential consistency is at least as strong as any.
#define NS_TSAN_ATOMIC(bits, T)                                                                   \
  extern "C" T __tsan_atomic##bits##_load(const volatile T* a, int) {                            \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                 \
  }                                                                                              \
  extern "C" void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                         \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                    \
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                         \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                          \
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) {                        \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) {                        \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) {                        \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) {                         \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) {                        \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_fetch_nand(volatile T* a, T v, int) {                       \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                          \
  }                                                                                              \
  extern "C" int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected, T v,  \
                                                               int, int) {                       \
    return __atomic_compare_exchange_n(a, expected, v, false, __ATOMIC_SEQ_CST,                  \
                                       __ATOMIC_SEQ_CST);                                        \
  }                                                                                              \
  extern "C" int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected, T v,    \
                                                             int, int) {                         \
    return __atomic_compare_exchange_n(a, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);\
  }                                                                                              \
  extern "C" T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T expected, T v, int,   \
                                                          int) {                                 \
    __atomic_compare_exchange_n(a, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
    return expected;                                                                             \
  }

NS_TSAN_ATOMIC(8, std::uint8_t)
NS_TSAN_ATOMIC(16, std::uint16_t)
NS_TSAN_ATOMIC(32, std::uint32_t)
NS_TSAN_ATOMIC(64, std::uint64_t)
#undef NS_TSAN_ATOMIC

extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
