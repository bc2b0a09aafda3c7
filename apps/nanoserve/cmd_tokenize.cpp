// nanoserve tokenize: a text's token ids and pieces, with the tokenizer a model uses.
//
//   nanoserve tokenize --model SmolLM2-135M --text "Hello world"
//   0  "Hello"   Hello
//   1  " world"  Ġworld
#include <cstdio>
#include <memory>
#include <string>

#include "apps/nanoserve/commands.h"
#include "common/error.h"
#include "common/io/input_file.h"
#include "common/model_bundle.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/utf8.h"

namespace nanoserve::cli {

namespace {

constexpr uint64_t kMaxTextBytes = 64ull << 20;  // a text file to tokenize

struct TokenizeArgs {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string text;
  std::string file;
  bool bos = false;
  bool ids_only = false;
};

// `s` quoted, with control characters and bytes that are not UTF-8 as escapes, so that a
// piece holding half a character or a newline is still one readable line.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = utf8_char_length(s, i);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (len == 0 || c < 0x20 || c == 0x7F) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out.append(s, i, len);
      i += len;
      continue;
    }
    ++i;
  }
  return out + "\"";
}

int run_tokenize(const TokenizeArgs& a) {
  if (a.text.empty() && a.file.empty()) throw InvalidArgument("give the text: --text T or --file F");
  const std::string text = a.file.empty() ? a.text : read_input_file(a.file, "text", kMaxTextBytes);
  const TokenizerBundle t = load_model_tokenizer(a.model, a.tokenizer);
  const Tokenizer& tok = *t.tokenizer;
  const std::vector<int> ids = tok.encode(text, a.bos, /*add_eos=*/false);
  const auto* hf = dynamic_cast<const HfBpeTokenizer*>(&tok);
  if (a.ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  } else {
    int prev = tok.bos_id();
    for (int id : ids) {
      std::string line = std::to_string(id) + "\t" + quoted(tok.decode_token(prev, id));
      if (hf) line += "\t" + hf->piece(id) + (hf->is_special(id) ? "\t(special)" : "");
      std::printf("%s\n", line.c_str());
      prev = id;
    }
  }
  std::fprintf(stderr, "%zu tokens from %zu bytes | tokenizer %s\n", ids.size(), text.size(),
               t.tokenizer_path.c_str());
  return 0;
}
}  // namespace

Action add_tokenize(CLI::App& parent) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* c = parent.add_subcommand(
      "tokenize", "Print a text's token ids and pieces (id, decoded text, vocabulary piece)");
  c->add_option("--model,-m", args->model,
                "model file or directory whose tokenizer is used (GGUF and HF: weights not loaded)")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", args->tokenizer, "tokenizer file (default: found from the model)");
  auto* text = c->add_option("--text", args->text, "the text");
  auto* file = c->add_option("--file,-f", args->file, "read the text from this file (at most 64 MiB)");
  text->excludes(file);
  c->add_flag("--bos", args->bos, "prepend BOS, as generate does");
  c->add_flag("--ids-only", args->ids_only, "print only the ids, on one line");
  return [args] { return run_tokenize(*args); };
}

}  // namespace nanoserve::cli
