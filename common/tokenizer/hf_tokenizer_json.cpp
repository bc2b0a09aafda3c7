// Reads Hugging Face `tokenizer.json` into an HfBpeSpec: exactly the subset the SentencePiece-
// style (TinyStories-656K, TinyLlama) and byte-level (GPT-2, SmolLM2, Llama 3, Qwen2) files
// use, and a LoadError naming the JSON field for anything else.

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/error.h"
#include "common/io/input_file.h"
#include "common/io/json_text.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/utf8.h"

namespace nanoserve {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxJsonBytes = 64ull << 20;  // ~7× Llama 3's tokenizer.json (9 MB)
// tokenizer_config.json is a few kilobytes (plus a chat template).
constexpr uint64_t kMaxConfigBytes = 4ull << 20;

// A JSON value for an error message, cut to a readable length.
std::string brief(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// Field access that turns every missing key or wrong type into LoadError(file, path, …).
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& detail) const {
    throw LoadError(file_, path, detail);
  }
  // j[key] if present and not null, else nullptr. j must be an object.
  const json* find(const json& j, const std::string& path, const char* key) const {
    if (!j.is_object()) fail(path, "is not a JSON object");
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  const json& at(const json& j, const std::string& path, const char* key) const {
    const json* v = find(j, path, key);
    if (!v) fail(join(path, key), "is missing");
    return *v;
  }
  std::string string(const json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "is not a string");
    return j.get<std::string>();
  }
  bool boolean(const json* j, const std::string& path, bool fallback) const {
    if (!j) return fallback;
    if (!j->is_boolean()) fail(path, "is not true/false");
    return j->get<bool>();
  }
  int64_t integer(const json& j, const std::string& path, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer()) fail(path, "is not an integer");
    if (j.is_number_unsigned() ? j.get<uint64_t>() > uint64_t(hi)
                               : j.get<int64_t>() < lo || j.get<int64_t>() > hi) {
      fail(path, brief(j) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return j.get<int64_t>();
  }
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

 private:
  std::string file_;
};

// The elements a tokenizer.json of `max_vocab` tokens holds: a vocab entry is a key and a
// value, a merge at most an array and two strings, and everything else is small.
JsonLimits tokenizer_limits(int max_vocab) {
  JsonLimits l;
  l.max_elements = 5 * uint64_t(max_vocab) + 65536;
  l.elements_reason = "for a tokenizer of at most " + std::to_string(max_vocab) + " tokens";
  return l;
}

// A `String` pattern ({"String": "x"}); regex patterns are not implemented.
std::string string_pattern(const Reader& r, const json& step, const std::string& path) {
  const json& pattern = r.at(step, path, "pattern");
  const std::string p = Reader::join(path, "pattern");
  if (!pattern.is_object() || !pattern.contains("String")) {
    r.fail(p, "only {\"String\": …} patterns are supported, got " + brief(pattern));
  }
  std::string s = r.string(pattern["String"], Reader::join(p, "String"));
  if (s.empty()) r.fail(Reader::join(p, "String"), "is empty");
  return s;
}

// A component that is either {"type": "Sequence", <list_key>: [...]} or one step.
template <class ParseStep>
void for_each_step(const Reader& r, const json& j, const std::string& path, const char* list_key,
                   ParseStep&& parse_step) {
  const std::string type = r.string(r.at(j, path, "type"), Reader::join(path, "type"));
  if (type != "Sequence") return parse_step(j, path, type);
  const json& list = r.at(j, path, list_key);
  const std::string lpath = Reader::join(path, list_key);
  if (!list.is_array()) r.fail(lpath, "is not an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string ipath = Reader::index(lpath, i);
    parse_step(list[i], ipath, r.string(r.at(list[i], ipath, "type"), Reader::join(ipath, "type")));
  }
}

void parse_normalizer(const Reader& r, const json& root, HfBpeSpec& spec) {
  const json* n = r.find(root, "", "normalizer");
  if (!n) return;
  for_each_step(r, *n, "normalizer", "normalizers",
                [&](const json& step, const std::string& path, const std::string& type) {
    if (type == "Prepend") {
      spec.normalizer.push_back({HfNormalizerStep::Kind::kPrepend, "",
                                 r.string(r.at(step, path, "prepend"), path + ".prepend")});
    } else if (type == "Replace") {
      spec.normalizer.push_back({HfNormalizerStep::Kind::kReplace,
                                 string_pattern(r, step, path),
                                 r.string(r.at(step, path, "content"), path + ".content")});
    } else if (type == "NFC") {
      spec.normalizer.push_back({HfNormalizerStep::Kind::kNfc, "", ""});
    } else {
      r.fail(Reader::join(path, "type"), "'" + type + "' is not supported (Prepend, Replace, NFC)");
    }
  });
}

// `Metaspace` (a pre-tokenizer, and the decoder of the same name): `replacement` (one
// character), `prepend_scheme` ("always", "first", "never"; older files say
// `add_prefix_space`), `split` (default true).
HfMetaspace parse_metaspace(const Reader& r, const json& step, const std::string& path) {
  HfMetaspace m;
  m.replacement = r.string(r.at(step, path, "replacement"), path + ".replacement");
  if (m.replacement.empty() || utf8_char_length(m.replacement, 0) != m.replacement.size()) {
    r.fail(path + ".replacement", "'" + m.replacement + "' is not one character");
  }
  const bool prefix =
      r.boolean(r.find(step, path, "add_prefix_space"), path + ".add_prefix_space", true);
  m.prepend = prefix ? HfMetaspace::Prepend::kAlways : HfMetaspace::Prepend::kNever;
  if (const json* scheme = r.find(step, path, "prepend_scheme")) {
    const std::string v = r.string(*scheme, path + ".prepend_scheme");
    if (v == "always") m.prepend = HfMetaspace::Prepend::kAlways;
    else if (v == "first") m.prepend = HfMetaspace::Prepend::kFirst;
    else if (v == "never") m.prepend = HfMetaspace::Prepend::kNever;
    else r.fail(path + ".prepend_scheme", "'" + v + "' is not always, first or never");
  }
  m.split = r.boolean(r.find(step, path, "split"), path + ".split", true);
  return m;
}

// `Split` on a regex (or a literal), `Digits`, and a final `ByteLevel`, each as
// pre_tokenizer.h implements them; every other option is refused by name.
void parse_pre_tokenizer(const Reader& r, const json& root, HfBpeSpec& spec) {
  const json* pt = r.find(root, "", "pre_tokenizer");
  if (!pt) return;
  using Kind = HfPreTokenizerStep::Kind;
  auto compile = [&](const std::string& pattern, const std::string& path) {
    try {
      return std::make_shared<const RegexSplitter>(pattern);
    } catch (const InvalidArgument& e) {
      r.fail(path, e.what());
    }
  };
  for_each_step(r, *pt, "pre_tokenizer", "pretokenizers",
                [&](const json& step, const std::string& path, const std::string& type) {
    if (spec.byte_level) r.fail(path, "a pre-tokenizer after ByteLevel is not supported");
    if (type == "Metaspace" || spec.metaspace) {
      if (spec.metaspace || !spec.pre_tokenizer.empty()) {
        r.fail(path, "Metaspace combined with other pre-tokenizers is not supported");
      }
      spec.metaspace = parse_metaspace(r, step, path);
      return;
    }
    if (type == "Split") {
      const json& pattern = r.at(step, path, "pattern");
      const std::string p = Reader::join(path, "pattern");
      std::string regex;
      if (pattern.is_object() && pattern.contains("Regex")) {
        regex = r.string(pattern["Regex"], p + ".Regex");
      } else if (pattern.is_object() && pattern.contains("String")) {
        const std::string literal = r.string(pattern["String"], p + ".String");
        if (literal.find("\\E") != std::string::npos) r.fail(p + ".String", "contains \\E");
        regex = "\\Q" + literal + "\\E";
      } else {
        r.fail(p, "is neither {\"Regex\": …} nor {\"String\": …}: " + brief(pattern));
      }
      const std::string behavior = r.string(r.at(step, path, "behavior"), path + ".behavior");
      if (behavior != "Isolated") {
        r.fail(path + ".behavior", "'" + behavior + "' is not supported (Isolated)");
      }
      if (r.boolean(r.find(step, path, "invert"), path + ".invert", false)) {
        r.fail(path + ".invert", "true is not supported");
      }
      spec.pre_tokenizer.push_back({Kind::kSplit, compile(regex, p)});
    } else if (type == "Digits") {
      const bool single =
          r.boolean(r.find(step, path, "individual_digits"), path + ".individual_digits", false);
      spec.pre_tokenizer.push_back({Kind::kDigits, compile(single ? "\\p{N}" : "\\p{N}+", path)});
    } else if (type == "ByteLevel") {
      if (r.boolean(r.find(step, path, "add_prefix_space"), path + ".add_prefix_space", false)) {
        r.fail(path + ".add_prefix_space", "true is not supported");
      }
      const bool use_regex = r.boolean(r.find(step, path, "use_regex"), path + ".use_regex", true);
      spec.pre_tokenizer.push_back(
          {Kind::kByteLevel, use_regex ? compile(kGpt2Pattern, path) : nullptr});
      spec.byte_level = true;
    } else {
      r.fail(Reader::join(path, "type"),
             "'" + type + "' is not supported (Split, Digits, ByteLevel, Metaspace)");
    }
  });
}

void parse_decoder(const Reader& r, const json& root, HfBpeSpec& spec) {
  const json* d = r.find(root, "", "decoder");
  if (!d) return;
  for_each_step(r, *d, "decoder", "decoders",
                [&](const json& step, const std::string& path, const std::string& type) {
    HfDecoderStep s{HfDecoderStep::Kind::kFuse, "", "", 0};
    if (type == "Replace") {
      s = {HfDecoderStep::Kind::kReplace, string_pattern(r, step, path),
           r.string(r.at(step, path, "content"), path + ".content"), 0};
    } else if (type == "ByteFallback") {
      s.kind = HfDecoderStep::Kind::kByteFallback;
    } else if (type == "Fuse") {
      s.kind = HfDecoderStep::Kind::kFuse;
    } else if (type == "ByteLevel") {
      s.kind = HfDecoderStep::Kind::kByteLevel;
    } else if (type == "Metaspace") {
      const HfMetaspace m = parse_metaspace(r, step, path);
      s = {HfDecoderStep::Kind::kMetaspace, m.replacement, " ",
           m.prepend == HfMetaspace::Prepend::kNever ? 0 : 1};
    } else if (type == "Strip") {
      s.kind = HfDecoderStep::Kind::kStrip;
      s.content = r.string(r.at(step, path, "content"), path + ".content");
      if (s.content.empty()) r.fail(path + ".content", "is empty");
      s.start = static_cast<int>(r.integer(r.at(step, path, "start"), path + ".start", 0, 1 << 20));
      if (r.integer(r.at(step, path, "stop"), path + ".stop", 0, 1 << 20) != 0) {
        r.fail(path + ".stop", "only 0 is supported (no stripping at the end)");
      }
    } else {
      r.fail(Reader::join(path, "type"),
             "'" + type +
                 "' is not supported (Replace, ByteFallback, Fuse, Strip, ByteLevel, Metaspace)");
    }
    spec.decoder.push_back(std::move(s));
  });
}

void parse_model(const Reader& r, const json& root, int max_vocab, HfBpeSpec& spec,
                 std::unordered_map<std::string, int>& ids) {
  const json& m = r.at(root, "", "model");
  if (const std::string type = r.string(r.at(m, "model", "type"), "model.type"); type != "BPE") {
    r.fail("model.type", "'" + type + "' is not supported (BPE)");
  }
  const json* dropout = r.find(m, "model", "dropout");
  if (dropout && !(dropout->is_number() && dropout->get<double>() == 0)) {
    r.fail("model.dropout", brief(*dropout) + ": BPE dropout is not supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* v = r.find(m, "model", key);
    if (v && !(v->is_string() && v->get<std::string>().empty())) {
      r.fail(Reader::join("model", key), brief(*v) + " is not supported (null)");
    }
  }
  spec.ignore_merges = r.boolean(r.find(m, "model", "ignore_merges"), "model.ignore_merges", false);
  spec.fuse_unk = r.boolean(r.find(m, "model", "fuse_unk"), "model.fuse_unk", false);
  spec.byte_fallback = r.boolean(r.find(m, "model", "byte_fallback"), "model.byte_fallback", false);

  const json& vocab = r.at(m, "model", "vocab");
  if (!vocab.is_object() || vocab.empty()) r.fail("model.vocab", "is not a non-empty object");
  if (vocab.size() > size_t(max_vocab)) {
    r.fail("model.vocab", std::to_string(vocab.size()) + " tokens exceed the limit of " +
                              std::to_string(max_vocab));
  }
  spec.vocab.assign(vocab.size(), std::string());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& [piece, id_json] : vocab.items()) {
    const std::string path = "model.vocab[\"" + piece + "\"]";
    if (piece.empty()) r.fail(path, "the empty string is not a token");
    const auto id = static_cast<size_t>(r.integer(id_json, path, 0, int64_t(vocab.size()) - 1));
    if (seen[id]) r.fail(path, "id " + std::to_string(id) + " is used twice");
    seen[id] = true;
    spec.vocab[id] = piece;
    ids.emplace(piece, static_cast<int>(id));
  }
  auto id_of = [&](const std::string& piece, const std::string& path) {
    const auto it = ids.find(piece);
    if (it == ids.end()) r.fail(path, "'" + piece + "' is not in model.vocab");
    return it->second;
  };
  // Byte-level vocabularies cover every byte and have none (null).
  const json* unk = r.find(m, "model", "unk_token");
  spec.unk_id = unk ? id_of(r.string(*unk, "model.unk_token"), "model.unk_token") : -1;

  const json& merges = r.at(m, "model", "merges");
  if (!merges.is_array()) r.fail("model.merges", "is not an array");
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string path = Reader::index("model.merges", i);
    std::string left, right;
    if (merges[i].is_string()) {  // "left right"
      const std::string s = merges[i].get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        r.fail(path, "'" + s + "' is not two tokens separated by one space");
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (merges[i].is_array() && merges[i].size() == 2) {  // ["left", "right"]
      left = r.string(merges[i][0], Reader::index(path, 0));
      right = r.string(merges[i][1], Reader::index(path, 1));
    } else {
      r.fail(path, "is neither \"left right\" nor [\"left\", \"right\"]");
    }
    spec.merges.push_back({id_of(left, path), id_of(right, path), id_of(left + right, path)});
  }
}

void parse_added_tokens(const Reader& r, const json& root, int max_vocab, HfBpeSpec& spec,
                        std::unordered_map<std::string, int>& ids) {
  const json* added = r.find(root, "", "added_tokens");
  if (!added) return;
  const size_t base_vocab = spec.vocab.size();
  if (!added->is_array()) r.fail("added_tokens", "is not an array");
  for (size_t i = 0; i < added->size(); ++i) {
    const json& t = (*added)[i];
    const std::string path = Reader::index("added_tokens", i);
    // Llama 3 and Qwen2 put their specials after model.vocab: the vocabulary grows to hold them.
    const int id = static_cast<int>(r.integer(r.at(t, path, "id"), path + ".id", 0, max_vocab - 1));
    const std::string content = r.string(r.at(t, path, "content"), path + ".content");
    if (content.empty()) r.fail(path + ".content", "is empty");
    if (size_t(id) >= base_vocab) {
      if (size_t(id) >= spec.vocab.size()) spec.vocab.resize(size_t(id) + 1);
      if (!spec.vocab[id].empty()) r.fail(path + ".id", std::to_string(id) + " is used twice");
      if (!ids.emplace(content, id).second) {
        r.fail(path + ".content", "'" + content + "' already has id " + std::to_string(ids[content]));
      }
      spec.vocab[id] = content;
    } else if (content != spec.vocab[id]) {
      r.fail(path + ".content", "'" + content + "' but model.vocab has '" + spec.vocab[id] +
                                    "' at id " + std::to_string(id));
    }
    for (const char* key : {"single_word", "lstrip", "rstrip"}) {
      if (r.boolean(r.find(t, path, key), Reader::join(path, key), false)) {
        r.fail(Reader::join(path, key), "true is not supported");
      }
    }
    // Required rather than defaulted: the default lives in the library, not in the file.
    const json& normalized = r.at(t, path, "normalized");
    const bool is_normalized = r.boolean(&normalized, path + ".normalized", false);
    const bool special = r.boolean(r.find(t, path, "special"), path + ".special", false);
    spec.added_tokens.push_back({id, content, is_normalized, special});
  }
}

int special_token(const Reader& r, const json& config, const char* key,
                  const std::unordered_map<std::string, int>& ids, bool optional) {
  if (optional && !r.find(config, "", key)) return -1;  // null or absent: none (Qwen2's BOS)
  const json& v = r.at(config, "", key);
  const std::string content =
      v.is_object() ? r.string(r.at(v, key, "content"), std::string(key) + ".content")
                    : r.string(v, key);
  const auto it = ids.find(content);
  if (it == ids.end()) r.fail(key, "'" + content + "' is not in the tokenizer's vocabulary");
  return it->second;
}

std::unique_ptr<HfBpeTokenizer> parse_checked(std::string_view tokenizer_json,
                                              const std::string& tokenizer_name,
                                              std::string_view config_json,
                                              const std::string& config_name, int max_vocab) {
  const Reader r(tokenizer_name);
  const json root = parse_json_text(tokenizer_json, tokenizer_name, 1, tokenizer_limits(max_vocab));
  if (!root.is_object()) r.fail("json", "the top level is not an object");
  for (const char* key : {"truncation", "padding"}) {
    if (const json* v = r.find(root, "", key)) r.fail(key, brief(*v) + " is not supported (null)");
  }
  if (const json* v = r.find(root, "", "post_processor")) {
    // It only says which special tokens `tokenizers` adds around a text (and, for ByteLevel,
    // how offsets are trimmed); here the caller decides with encode()'s add_bos/add_eos.
    for_each_step(r, *v, "post_processor", "processors",
                  [&](const json&, const std::string& path, const std::string& type) {
      if (type != "TemplateProcessing" && type != "ByteLevel") {
        r.fail(Reader::join(path, "type"),
               "'" + type + "' is not supported (TemplateProcessing, ByteLevel)");
      }
    });
  }
  HfBpeSpec spec;
  std::unordered_map<std::string, int> ids;
  parse_model(r, root, max_vocab, spec, ids);
  parse_normalizer(r, root, spec);
  parse_pre_tokenizer(r, root, spec);
  parse_decoder(r, root, spec);
  parse_added_tokens(r, root, max_vocab, spec, ids);

  const Reader rc(config_name);
  const json config = parse_json_text(config_json, config_name);
  if (!config.is_object()) rc.fail("json", "the top level is not an object");
  spec.bos_id = special_token(rc, config, "bos_token", ids, /*optional=*/true);
  spec.eos_id = special_token(rc, config, "eos_token", ids, /*optional=*/false);
  return std::make_unique<HfBpeTokenizer>(std::move(spec));
}

}  // namespace

std::unique_ptr<HfBpeTokenizer> parse_hf_tokenizer(std::string_view tokenizer_json,
                                                   const std::string& tokenizer_name,
                                                   std::string_view config_json,
                                                   const std::string& config_name,
                                                   int max_vocab) {
  if (max_vocab < 0 || max_vocab > (1 << 24)) {
    throw InvalidArgument("parse_hf_tokenizer: max_vocab = " + std::to_string(max_vocab) +
                          " is outside [0, 2^24] (0: kMaxHfVocab)");
  }
  try {
    return parse_checked(tokenizer_json, tokenizer_name, config_json, config_name,
                         max_vocab == 0 ? kMaxHfVocab : max_vocab);
  } catch (const json::exception& e) {  // a check parse_checked missed: still a LoadError
    throw LoadError(tokenizer_name, "json", e.what());
  }
}

std::unique_ptr<HfBpeTokenizer> load_hf_tokenizer(const std::string& path, int max_vocab) {
  const std::string text = read_input_file(path, "tokenizer", kMaxJsonBytes);
  const size_t slash = path.find_last_of('/');
  const std::string config_path =
      (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
      "tokenizer_config.json";
  const std::string config = read_input_file(
      config_path, "tokenizer_config.json (it names bos_token and eos_token for " + path + ")",
      kMaxConfigBytes);
  return parse_hf_tokenizer(text, path, config, config_path, max_vocab);
}

}  // namespace nanoserve
