#pragma once
/// \file
/// \brief Helpers shared by the test suites: locating real model files (skipping cleanly when
/// they are absent) and writing scratch files for bad-input tests.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/data_path.h"

namespace nanoserve::testing {

/// \brief Path of a real data file, or std::nullopt (callers then GTEST_SKIP with a message).
inline std::optional<std::string> data_file(const std::string& name) {
  return find_data_file(name);
}

/// \brief Skips the current test, naming the missing file, when `name` cannot be found.
#define NANOSERVE_REQUIRE_DATA(var, name)                                                  \
  const std::optional<std::string> var##_opt = ::nanoserve::testing::data_file(name);      \
  if (!var##_opt) {                                                                        \
    GTEST_SKIP() << "real data file '" << (name)                                           \
                 << "' not found; set NANOSERVE_DATA=../shared/data (see README)";         \
  }                                                                                        \
  const std::string var = *var##_opt

/// \brief Reads a whole file into bytes.
inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

/// \brief A scratch directory of this test process (gtest's TempDir() + "nanoserve-<pid>/",
/// created on first use). ctest runs every test in its own process, in parallel: a fixed file
/// name directly in TempDir() would be written by two tests at once.
inline std::string temp_dir() {
  static const std::string dir = [] {
    const std::string d = ::testing::TempDir() + "nanoserve-" + std::to_string(::getpid()) + "/";
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

/// \brief Writes bytes to a file in the test's temporary directory and returns its path.
inline std::string write_temp_file(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = temp_dir() + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace nanoserve::testing
