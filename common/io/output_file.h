#pragma once
/// \file
/// \brief Writing results (JSON reports, traces, quantized models) and finishing stdout with
/// every write checked: a full disk, a closed pipe or `/dev/full` is an error naming the path
/// and the reason (`strerror`), never an exit status of 0 over a file that was not written.
///
/// Buffered output fails late: `write()` may succeed into the page cache and the error shows
/// only at the final flush or `close()`, so both are checked too.

#include <string>
#include <string_view>

namespace nanoserve {

/// \brief Creates or truncates `path` and writes `bytes` to it; every `write()` and the final
/// `close()` are checked. Throws `Error("PATH: cannot write: REASON")`.
void write_output_file(const std::string& path, std::string_view bytes);

/// \brief Throws `Error("PATH: cannot write: REASON")` unless `path` can be created for
/// writing now (a program calls it before a long run, so a bad `--json` fails at once). It
/// leaves an empty file behind, which the real write replaces.
void check_output_path(const std::string& path);

/// \brief Flushes stdout now (text streamed token by token); throws `Error("stdout: write
/// failed: REASON")` when the flush fails, so a full disk stops the run at once.
void flush_stdout();

/// \brief Flushes and closes stdout; throws `Error("stdout: write failed: REASON")` when any
/// earlier write to it failed or the flush or close fails. Every program calls it last.
void finish_stdout();

}  // namespace nanoserve
