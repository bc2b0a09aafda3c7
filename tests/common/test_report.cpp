// The provenance every results JSON carries (common/report.h): the commit and whether the tree
// differed from it, as configured or as the environment of a copied binary says.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/report.h"
#include "test_support.h"

namespace nanoserve {
namespace {

// Sets (or unsets, with nullopt) an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Report, WrittenJsonCarriesShaAndDirtyFlag) {
  const ScopedEnv sha("NANOSERVE_GIT_SHA", std::nullopt);
  const ScopedEnv dirty("NANOSERVE_GIT_DIRTY", std::nullopt);
  const std::string path = testing::temp_dir() + "report_stamp.json";
  write_json(path, make_report("test_report", "host", "none"));

  std::ifstream in(path);
  const nlohmann::json back = nlohmann::json::parse(in);
  for (const char* field : {"program", "backend", "device", "git_sha", "git_dirty", "date", "records"}) {
    EXPECT_TRUE(back.contains(field)) << field;
  }
  ASSERT_TRUE(back["git_dirty"].is_boolean());
  EXPECT_EQ(back["git_dirty"].get<bool>(), git_dirty());
  EXPECT_EQ(back["git_sha"].get<std::string>(), git_sha());
  EXPECT_FALSE(git_sha().empty());
}

TEST(Report, EnvironmentSaysWhetherACopiedBinarysTreeWasDirty) {
  const ScopedEnv sha("NANOSERVE_GIT_SHA", std::string("0123456789ab"));
  for (const char* yes : {"1", "true", "yes"}) {
    const ScopedEnv dirty("NANOSERVE_GIT_DIRTY", std::string(yes));
    EXPECT_TRUE(git_dirty()) << yes;
    EXPECT_TRUE(make_report("p", "b", "d")["git_dirty"].get<bool>()) << yes;
  }
  for (const char* no : {"0", "false", "no"}) {
    const ScopedEnv dirty("NANOSERVE_GIT_DIRTY", std::string(no));
    EXPECT_FALSE(git_dirty()) << no;
    EXPECT_FALSE(make_report("p", "b", "d")["git_dirty"].get<bool>()) << no;
  }
  EXPECT_EQ(make_report("p", "b", "d")["git_sha"], "0123456789ab");
}

TEST(Report, ShaFromEnvironmentWithoutDirtyFlagIsNotClaimedClean) {
  // The configured flag describes the configured commit, not the one the environment names.
  const ScopedEnv sha("NANOSERVE_GIT_SHA", std::string("0123456789ab"));
  const ScopedEnv dirty("NANOSERVE_GIT_DIRTY", std::nullopt);
  EXPECT_TRUE(git_dirty());
}

TEST(Report, RejectsADirtyFlagItCannotRead) {
  const ScopedEnv dirty("NANOSERVE_GIT_DIRTY", std::string("maybe"));
  try {
    git_dirty();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NANOSERVE_GIT_DIRTY: 'maybe'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nanoserve
