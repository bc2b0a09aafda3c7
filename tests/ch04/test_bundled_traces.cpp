// The traces under data/traces/ are exactly what the generator makes from the specs in
// `bundled_traces()`, so they can always be regenerated (and a generator change that alters
// them is noticed). Regenerate with:
//   NANOSERVE_WRITE_TRACES=1 ctest --preset sim -R Ch04BundledTraces
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/harness/trace.h"
#include "common/harness/workload.h"

namespace nanoserve {
namespace {

TEST(Ch04BundledTraces, FilesEqualTheGeneratorsOutput) {
  const char* write = std::getenv("NANOSERVE_WRITE_TRACES");
  for (const harness::BundledTrace& t : harness::bundled_traces()) {
    const std::string path = "data/traces/" + t.file;  // ctest runs in the source root
    if (write != nullptr && std::string(write) == "1") harness::write_trace(path, harness::generate_workload(t.spec));
    EXPECT_EQ(harness::load_trace(path), harness::generate_workload(t.spec)) << path;
  }
}

}  // namespace
}  // namespace nanoserve
