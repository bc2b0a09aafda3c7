// nanoserve: the project's command line.
//
//   nanoserve generate --model stories260K.bin --prompt "Once upon a time" --temperature 0
//   nanoserve generate --model stories260K.bin --device gpu --dtype fp16
//   nanoserve eval --model tinystories-656k --text tinystories_valid_sample.txt
//   nanoserve info --model synthetic:llama3-8b
//   nanoserve logits --model tinystories-656k --tokens 80,147,201,282 --device gpu --json l.json
//   nanoserve quantize --model stories260K.bin --method gptq --bits 4 --group 128 --out q.nsqm
//   nanoserve generate --model q.nsqm --device gpu -t 0
//   nanoserve tokenize --model SmolLM2-135M --text "Hello world"
//   nanoserve chat --model SmolLM2-135M-Instruct --device gpu
//   nanoserve convert stories260K.bin stories260K.gguf --dtype fp32
//   nanoserve serve --model stories260K.bin --port 8000
//
// Errors (bad flags, bad files, impossible requests) print one line and exit non-zero.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <string>

#include "apps/nanoserve/commands.h"
#include "common/cli/program.h"

int main(int argc, char** argv) {
  CLI::App app{"nanoserve: LLM inference techniques, chapter by chapter"};
  app.require_subcommand(1);
  std::map<CLI::App*, nanoserve::cli::Action> actions;
  for (auto add : {nanoserve::cli::add_generate, nanoserve::cli::add_eval,
                   nanoserve::cli::add_logits, nanoserve::cli::add_info,
                   nanoserve::cli::add_quantize,
                   nanoserve::cli::add_tokenize, nanoserve::cli::add_chat,
                   nanoserve::cli::add_convert, nanoserve::cli::add_serve}) {
    nanoserve::cli::Action action = add(app);
    actions[app.get_subcommands({}).back()] = std::move(action);
  }
  // The first word that is not an option names the subcommand. CLI11 would report an unknown
  // one as "A subcommand is required" (and `nanoserve serve --help` as the main help, exit 0),
  // so it is named here first.
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') continue;
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->check_name(word);
    }
    if (found) break;
    std::fprintf(stderr, "nanoserve: error: '%s' is not a subcommand (known: %s); see "
                 "nanoserve --help\n", word.c_str(), known.c_str());
    return 2;
  }
  return nanoserve::cli::run_program("nanoserve", app, argc, argv,
                                     [&] { return actions.at(app.get_subcommands().front())(); });
}
