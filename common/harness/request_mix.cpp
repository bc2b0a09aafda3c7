#include "common/harness/request_mix.h"

namespace nanoserve::harness {

// Shapes loosely after chat traffic: many short exchanges, a few long generations, one long
// prompt with a short answer. Chosen by hand, not measured from a trace.
std::vector<RequestShape> mixed_length_requests() {
  return {
      {"greeting", 8, 8},     {"question", 24, 40},  {"story", 12, 150},   {"summary", 120, 24},
      {"chat turn", 48, 64},  {"list", 16, 96},      {"rewrite", 64, 56},  {"long story", 32, 214},
  };
}

}  // namespace nanoserve::harness
