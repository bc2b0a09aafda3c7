// nanoserve: the project's command line. Subcommands are added as the library grows.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"nanoserve: LLM inference techniques, chapter by chapter"};
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (app.get_subcommands().empty()) std::puts(app.help().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nanoserve: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
