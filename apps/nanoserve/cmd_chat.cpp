// nanoserve chat: an interactive terminal chat. Each line read from stdin is a user message;
// the conversation is rendered with the model's chat template (add_generation_prompt), and the
// reply is streamed to stdout token by token as it is generated.
//
//   nanoserve chat --model SmolLM2-135M-Instruct --device gpu
//   nanoserve chat -m synthetic:tiny --template tests/data/chat_templates/smollm2.jinja < lines
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "apps/nanoserve/commands.h"
#include "apps/nanoserve/model_source.h"
#include "common/chat/chat_template.h"
#include "common/cli/cli_checks.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/device_model.h"
#include "common/error.h"
#include "common/generation/generate.h"
#include "common/io/input_file.h"
#include "common/io/output_file.h"
#include "common/model_bundle.h"
#include "common/oracle/oracle_decoder.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"

namespace nanoserve::cli {

namespace {

struct ChatArgs {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string template_file;
  std::string system;
  int steps = 256;
  SamplingParams sampling{0.7f, 0, 0.9f, 0.0f, 42};
  std::string device = "cpu";
  std::string dtype;     // empty: fp32 on the CPU oracle, engine::default_dtype() on the device
  std::string kv_dtype;  // empty: --dtype
};

int run_chat(const ChatArgs& a) {
  const ModelSource src = load_model_source(a.model, a.tokenizer, a.device == "gpu");
  const Tokenizer& tok = *src.tokenizer;
  const std::string source = a.template_file.empty()
                                 ? src.chat_template
                                 : read_input_file(a.template_file, "chat template", 1u << 20);
  if (source.empty()) {
    throw InvalidArgument(src.description + " has no chat template (chat_template in "
                          "tokenizer_config.json, tokenizer.chat_template in GGUF); pass "
                          "--template FILE, or use `nanoserve generate` for plain text");
  }
  // The template writes BOS/EOS as text when the tokenizer has them as added tokens (HF,
  // GGUF BPE); other tokenizers get BOS from encode, as `generate` does.
  const auto* hf = dynamic_cast<const HfBpeTokenizer*>(&tok);
  const std::string bos = hf && tok.bos_id() >= 0 ? hf->piece(tok.bos_id()) : "";
  const std::string eos = hf ? hf->piece(tok.eos_id()) : "";
  const chat::ChatTemplate chat_template(source, bos, eos);

  const int context = src.model.config.max_seq_len;
  std::unique_ptr<engine::DeviceModel> device_model;
  std::unique_ptr<Decoder> backend;
  if (a.device == "gpu") {
    const DType dtype = device_dtype_or_default(a.dtype);
    device_model = src.to_device(dtype);
    backend = std::make_unique<engine::NaiveDecoder>(*device_model, engine::CacheMode::kNaiveCache,
                                                      context, dtype, kv_dtype_or(a.kv_dtype, dtype));
  } else {
    check_cpu_dtypes(a.dtype, a.kv_dtype);
    backend = std::make_unique<oracle::OracleDecoder>(src.model, context);
  }

  GenerateOptions opt;
  opt.max_new_tokens = a.steps;
  opt.sampling = a.sampling;
  // The turn ends at EOS, BOS, or any special token (<|eot_id|>, <|im_end|>, …).
  opt.stop_tokens = {tok.eos_id(), tok.bos_id()};
  if (hf) {
    for (int id = 0; id < tok.vocab_size(); ++id) {
      if (hf->is_special(id)) opt.stop_tokens.push_back(id);
    }
  }
  auto is_stop = [&](int t) {
    return std::find(opt.stop_tokens.begin(), opt.stop_tokens.end(), t) != opt.stop_tokens.end();
  };

  std::vector<chat::ChatMessage> messages;
  if (!a.system.empty()) messages.push_back({"system", a.system});
  std::fprintf(stderr, "chat with %s (%s); one message per line, end with Ctrl-D\n",
               src.description.c_str(), backend->device_name().c_str());
  std::string line;
  int turns = 0;
  while (std::fputs("> ", stderr), std::getline(std::cin, line)) {
    if (line.empty()) continue;
    messages.push_back({"user", line});
    const std::string prompt_text = chat_template.render(messages, /*add_generation_prompt=*/true);
    const std::vector<int> prompt = tok.encode(prompt_text, /*add_bos=*/bos.empty(), false);
    if (static_cast<int>(prompt.size()) >= context) {
      throw InvalidArgument("the conversation has " + std::to_string(prompt.size()) +
                            " tokens but the context holds " + std::to_string(context));
    }
    std::vector<int> reply;
    int prev = prompt.back();
    opt.on_token = [&](int t) {
      if (!is_stop(t)) {
        std::fputs(tok.decode_token(prev, t).c_str(), stdout);
        reply.push_back(t);
      }
      flush_stdout();
      prev = t;
    };
    const GenerateResult r = generate(*backend, prompt, opt);
    std::fputc('\n', stdout);
    flush_stdout();
    std::fprintf(stderr, "[%d prompt tokens, %d generated, stop: %s]\n", r.prompt_tokens,
                 r.generated(), to_string(r.stop));
    messages.push_back({"assistant", tok.decode(reply)});
    ++turns;
  }
  std::fprintf(stderr, "\n%d turns\n", turns);
  return 0;
}
}  // namespace

Action add_chat(CLI::App& parent) {
  auto args = std::make_shared<ChatArgs>();
  CLI::App* c = parent.add_subcommand(
      "chat", "Interactive chat: stdin lines are user messages, replies stream to stdout");
  c->add_option("--model,-m", args->model, "model file, directory or synthetic:<name>")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", args->tokenizer, "tokenizer file (default: found from the model)");
  c->add_option("--template", args->template_file,
                "Jinja chat template file (default: the model's own)");
  c->add_option("--system", args->system, "a system message to start the conversation with");
  c->add_option("--steps,-n", args->steps, "most tokens per reply")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--temperature,-t", args->sampling.temperature, "0 = greedy")
      ->capture_default_str()->check(number_in(0, 100));
  c->add_option("--top-p", args->sampling.top_p, "nucleus sampling mass in (0, 1]")
      ->capture_default_str()->check(number_in(0, 1, /*open_low=*/true));
  c->add_option("--seed,-s", args->sampling.seed, "the RNG seed")->capture_default_str()
      ->check(seed_range());
  c->add_option("--device", args->device, "cpu = the Eigen oracle; gpu = the kernels")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu"}));
  c->add_option("--dtype", args->dtype,
                 "storage type of weights and activations (--device gpu; default: bf16 on a GPU "
                 "build, fp32 in the simulator and on the CPU oracle)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  c->add_option("--kv-dtype", args->kv_dtype,
                 "storage type of the KV cache (--device gpu; default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  return [args] { return run_chat(*args); };
}

}  // namespace nanoserve::cli
