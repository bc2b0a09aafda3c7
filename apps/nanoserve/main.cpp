// nanoserve: the project's command line.
//
//   nanoserve generate --model stories260K.bin --prompt "Once upon a time" --temperature 0
//   nanoserve generate --model stories260K.bin --device gpu --dtype fp16
//   nanoserve eval --model tinystories-656k --text tinystories_valid_sample.txt
//   nanoserve info --model synthetic:llama3-8b
//   nanoserve quantize --model stories260K.bin --method gptq --bits 4 --group 128 --out q.nsqm
//   nanoserve generate --model q.nsqm --device gpu -t 0
//
// Errors (bad flags, bad files, impossible requests) print one line and exit non-zero.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <map>

#include "apps/nanoserve/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"nanoserve: LLM inference techniques, chapter by chapter"};
  app.require_subcommand(1);
  std::map<CLI::App*, nanoserve::cli::Action> actions;
  for (auto add : {nanoserve::cli::add_generate, nanoserve::cli::add_eval,
                   nanoserve::cli::add_info, nanoserve::cli::add_quantize}) {
    nanoserve::cli::Action action = add(app);
    actions[app.get_subcommands({}).back()] = std::move(action);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return actions.at(app.get_subcommands().front())();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nanoserve: error: %s\n", e.what());
    return 1;
  }
}
