#include "common/cli/program.h"

#include <cstdio>
#include <exception>
#include <new>

#include "common/io/output_file.h"

namespace nanoserve::cli {

int run_checked(const char* program, const std::function<int()>& body) {
  try {
    const int rc = body();
    finish_stdout();
    return rc;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory (std::bad_alloc)\n", program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
  }
  return 1;
}

int run_program(const char* program, CLI::App& app, int argc, char** argv,
                const std::function<int()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // --help to stdout (0), a bad flag to stderr (non-zero)
    if (rc != 0) return rc;
    return run_checked(program, [] { return 0; });
  }
  return run_checked(program, body);
}

}  // namespace nanoserve::cli
