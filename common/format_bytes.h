#pragma once
/// \file
/// \brief `format_bytes`: byte counts for the tables programs print ("512 B", "1.5 KiB",
/// "13.48 GiB"), one spelling for every chapter and the CLI.
#include <string>

namespace nanoserve {

/// \brief `bytes` in binary units: whole bytes below 1 KiB, otherwise 4 significant digits of
/// KiB or MiB, and 2 decimals of GiB or TiB.
std::string format_bytes(double bytes);

}  // namespace nanoserve
