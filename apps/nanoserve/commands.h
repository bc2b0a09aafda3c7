#pragma once
// The subcommands of `nanoserve`. Each adds itself to the parent app and returns the action to
// run when it is selected.

#include <CLI/CLI.hpp>

#include <functional>

namespace nanoserve::cli {

/// \brief What a selected subcommand does; returns the process exit code.
using Action = std::function<int()>;

/// \brief `nanoserve generate`: text from a prompt.
Action add_generate(CLI::App& parent);
/// \brief `nanoserve eval`: perplexity and bits-per-byte over a text file.
Action add_eval(CLI::App& parent);
/// \brief `nanoserve logits`: every position's logits for given token ids (kernels or oracle).
Action add_logits(CLI::App& parent);
/// \brief `nanoserve info`: a model's shape, size and KV cost.
Action add_info(CLI::App& parent);
/// \brief `nanoserve quantize`: a model's linears to INT8/INT4 (RTN, GPTQ, AWQ), as NSQM.
Action add_quantize(CLI::App& parent);
/// \brief `nanoserve tokenize`: a text's token ids and pieces.
Action add_tokenize(CLI::App& parent);
/// \brief `nanoserve chat`: an interactive chat through the model's chat template.
Action add_chat(CLI::App& parent);
/// \brief `nanoserve convert`: a checkpoint written as a llama.cpp GGUF file.
Action add_convert(CLI::App& parent);
/// \brief `nanoserve serve`: the OpenAI-compatible HTTP server (chapter 8).
Action add_serve(CLI::App& parent);

}  // namespace nanoserve::cli
