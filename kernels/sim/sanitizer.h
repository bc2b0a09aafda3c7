#pragma once
/// \file
/// \brief Internal to the simulator: whether this translation unit is built with AddressSanitizer
/// (GCC defines `__SANITIZE_ADDRESS__`, clang answers `__has_feature(address_sanitizer)`).

#if defined(__SANITIZE_ADDRESS__)
#define NANOSERVE_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NANOSERVE_SIM_ASAN 1
#endif
#endif
#ifndef NANOSERVE_SIM_ASAN
/// \brief 1 when compiled with AddressSanitizer (fiber switches must then be annotated).
#define NANOSERVE_SIM_ASAN 0
#endif

#if NANOSERVE_SIM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
