// libFuzzer target: JSONL workload traces (chapters 3 and 4), one request per line. Every line
// goes through the bounded JSON parser and the field checks; a trace that parses is written
// back and must read back equal. Only nanoserve::Error may escape.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "common/harness/trace.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<nanoserve::harness::TraceRequest> trace;
  try {
    trace = nanoserve::harness::parse_trace(text, "fuzz.jsonl");
  } catch (const nanoserve::Error&) {
    return 0;  // rejected with a message: the expected outcome for malformed input
  }
  // Round trip: what the loader accepted, the writer writes, and the loader reads it back.
  static const std::string path = "/tmp/fuzz_trace_" + std::to_string(getpid()) + ".jsonl";
  nanoserve::harness::write_trace(path, trace);
  if (!(nanoserve::harness::load_trace(path) == trace)) {
    std::fprintf(stderr, "fuzz_trace: a written trace read back differently\n");
    __builtin_trap();
  }
  return 0;
}
