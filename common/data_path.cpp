#include "common/data_path.h"

#include <cstdlib>
#include <filesystem>

namespace nanoserve {

std::vector<std::string> data_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("NANOSERVE_DATA"); env != nullptr && *env != '\0') {
    dirs.emplace_back(env);
  }
#ifdef NANOSERVE_SOURCE_DIR
  dirs.emplace_back(std::string(NANOSERVE_SOURCE_DIR) + "/data/models");
#endif
  dirs.emplace_back("data/models");
  return dirs;
}

std::optional<std::string> find_data_file(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(name, ec)) return name;
  if (fs::path(name).is_absolute()) return std::nullopt;
  for (const std::string& dir : data_search_dirs()) {
    const fs::path candidate = fs::path(dir) / name;
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace nanoserve
