#pragma once
/// \file
/// \brief The frame of every program's `main` (docs/style.md, convention 11): parse the command
/// line, run, and turn any exception into one line on stderr and a non-zero exit — and only
/// then report success, after stdout has been flushed and closed without error (a full disk
/// or a closed pipe is a failure, not exit 0 over output that was never written).
///
///     int main(int argc, char** argv) {
///       CLI::App app{"..."};
///       ... add options ...
///       return nanoserve::cli::run_program("ch03_static_batching", app, argc, argv,
///                                          [&] { return run(args); });
///     }

#include <CLI/CLI.hpp>

#include <functional>

namespace nanoserve::cli {

/// \brief Parses `argv` with `app` (help and parse errors exit the way CLI11 prints them),
/// runs `body`, finishes stdout (`finish_stdout`) and returns the exit code; an exception
/// from any step prints `PROGRAM: error: MESSAGE` and returns 1.
int run_program(const char* program, CLI::App& app, int argc, char** argv,
                const std::function<int()>& body);

/// \brief The part of `run_program` after parsing: runs `body`, finishes stdout, and maps
/// exceptions to one line on stderr and exit code 1.
int run_checked(const char* program, const std::function<int()>& body);

}  // namespace nanoserve::cli
