#pragma once
/// \file
/// rief Results as JSON (docs/design.md, "Results"): every program writes `--json PATH` as
/// an object with provenance (program, backend, device, git sha, whether the tree was dirty,
/// date) and one record per table row, so plots and tutorials are generated from measurements,
/// never typed in.

#include <string>

#include <nlohmann/json.hpp>

namespace nanoserve {

/// \brief The commit the binary was configured from ("unknown" outside a git checkout);
/// `$NANOSERVE_GIT_SHA` overrides it (for builds copied to another machine).
std::string git_sha();

/// \brief Whether the tree the binary was configured from had changes to tracked files that the
/// commit `git_sha()` lacks (true outside a git checkout: not known to be clean).
/// `$NANOSERVE_GIT_DIRTY` (1/0, true/false, yes/no) overrides it; when `$NANOSERVE_GIT_SHA` is
/// set and this variable is not, the answer is true: the configured flag describes the configured
/// commit, not that one. Throws `Error` naming the variable on any other value.
bool git_dirty();

/// \brief Current UTC time as ISO 8601 ("2026-11-29T10:05:00Z").
std::string utc_timestamp();

/// \brief `{"program", "backend", "device", "git_sha", "git_dirty", "date", "records": []}`;
/// callers append rows to `records`.
nlohmann::json make_report(const std::string& program, const std::string& backend,
                           const std::string& device);

/// \brief Writes `report` (pretty-printed) to `path`; throws `Error` naming the path on failure.
void write_json(const std::string& path, const nlohmann::json& report);

}  // namespace nanoserve
