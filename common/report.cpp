#include "common/report.h"

#include <cstdlib>
#include <ctime>

#include "common/error.h"
#include "common/io/output_file.h"

namespace nanoserve {

std::string git_sha() {
  if (const char* env = std::getenv("NANOSERVE_GIT_SHA"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef NANOSERVE_CONFIGURED_GIT_SHA
  return NANOSERVE_CONFIGURED_GIT_SHA;
#else
  return "unknown";
#endif
}

bool git_dirty() {
  const char* env = std::getenv("NANOSERVE_GIT_DIRTY");
  if (env != nullptr && *env != '\0') {
    const std::string v = env;
    if (v == "1" || v == "true" || v == "yes") return true;
    if (v == "0" || v == "false" || v == "no") return false;
    throw Error("$NANOSERVE_GIT_DIRTY: '" + v + "' is not 1/0, true/false or yes/no");
  }
  const char* sha = std::getenv("NANOSERVE_GIT_SHA");
  if (sha != nullptr && *sha != '\0') return true;  // the configured flag is not that commit's
#ifdef NANOSERVE_CONFIGURED_GIT_DIRTY
  return NANOSERVE_CONFIGURED_GIT_DIRTY != 0;
#else
  return true;
#endif
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json make_report(const std::string& program, const std::string& backend,
                           const std::string& device) {
  return {{"program", program}, {"backend", backend}, {"device", device},
          {"git_sha", git_sha()}, {"git_dirty", git_dirty()}, {"date", utc_timestamp()},
          {"records", nlohmann::json::array()}};
}

void write_json(const std::string& path, const nlohmann::json& report) {
  write_output_file(path, report.dump(2) + "\n");
}

}  // namespace nanoserve
