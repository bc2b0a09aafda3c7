#pragma once
/// \file
/// \brief Results as JSON (docs/design.md, "Results"): every program writes `--json PATH` as
/// an object with provenance (program, backend, device, git sha, date) and one record per table
/// row, so plots and tutorials are generated from measurements, never typed in.

#include <string>

#include <nlohmann/json.hpp>

namespace nanoserve {

/// \brief The commit the binary was configured from ("unknown" outside a git checkout);
/// `$NANOSERVE_GIT_SHA` overrides it (for builds copied to another machine).
std::string git_sha();

/// \brief Current UTC time as ISO 8601 ("2026-11-29T10:05:00Z").
std::string utc_timestamp();

/// \brief `{"program", "backend", "device", "git_sha", "date", "records": []}`; callers append
/// rows to `records`.
nlohmann::json make_report(const std::string& program, const std::string& backend,
                           const std::string& device);

/// \brief Writes `report` (pretty-printed) to `path`; throws `Error` naming the path on failure.
void write_json(const std::string& path, const nlohmann::json& report);

}  // namespace nanoserve
