#pragma once
/// \file
/// \brief CLI11 validators for the numbers every program reads, so that each numeric flag
/// states its range in `--help` and a bad value is refused by the parser with the flag's name
/// ("--rate: 'nan' is not a number in (0, inf]") instead of surfacing later as an internal
/// message, a wrapped integer or a NaN that every comparison lets through.
///
/// `CLI::Range` is enough for integers; for floating-point flags it accepts "nan" (NaN fails
/// both `<` and `>`), and for unsigned integers CLI11 accepts "-1" as 2^64 - 1 — hence these.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace nanoserve::cli {

/// \brief A number in [lo, hi] (or (lo, hi] when `open_low`); NaN is refused, and infinity
/// only when it is inside the range (`hi` = infinity allows "inf").
CLI::Validator number_in(double lo, double hi, bool open_low = false);

/// \brief An RNG seed: a decimal integer in [0, 2^64 - 1] — no sign, no exponent, no wrap.
CLI::Validator seed_range();

}  // namespace nanoserve::cli
