#pragma once
/// \file
/// \brief Where model and text files are looked up (docs/design.md, "Models"): an existing path
/// as given, then `$NANOSERVE_DATA`, then the repository's `data/models/`.

#include <optional>
#include <string>
#include <vector>

namespace nanoserve {

/// \brief The directories searched for a bare file name, in order.
std::vector<std::string> data_search_dirs();

/// \brief Resolves `name`: returned unchanged if it exists as a path, else the first
/// `dir/name` that exists in `data_search_dirs()`, else `std::nullopt`.
std::optional<std::string> find_data_file(const std::string& name);

}  // namespace nanoserve
