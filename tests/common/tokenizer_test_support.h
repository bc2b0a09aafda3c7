#pragma once
// Helpers shared by the tokenizer tests: the committed reference fixtures (tests/data/), the
// text sample, and literal transcriptions of the reference merge loops to check the
// heap-based merging against.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/sampling/rng.h"
#include "common/tokenizer/llama_tokenizer.h"

namespace nanoserve::testing {

/// Path of a committed fixture under tests/data/, absolute (tests/CMakeLists.txt defines the
/// directory), so the tests run from any working directory. `__FILE__` is not enough: ccache
/// with `base_dir` set rewrites it to a path relative to the build directory.
inline std::string fixture_path(const std::string& name) {
  return std::string(NANOSERVE_TESTS_DIR) + "/data/" + name;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json read_fixture(const std::string& name) {
  return nlohmann::json::parse(read_text(fixture_path(name)));
}

/// The documents of tinystories_valid_sample.txt (the fixtures split it the same way).
inline std::vector<std::string> split_documents(const std::string& text,
                                                const std::string& separator) {
  std::vector<std::string> docs;
  size_t from = 0;
  for (size_t at = text.find(separator); at != std::string::npos;
       at = text.find(separator, from)) {
    docs.push_back(text.substr(from, at - from));
    from = at + separator.size();
  }
  docs.push_back(text.substr(from));
  return docs;
}

/// FNV-1a 64 over ids as 4-byte little-endian words, as the fixture generators compute it.
inline std::string fnv1a64(const std::vector<int>& ids) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int id : ids) {
    for (int k = 0; k < 4; ++k) {
      h = (h ^ ((uint32_t(id) >> (8 * k)) & 0xFF)) * 0x100000001B3ull;
    }
  }
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// SentencePiece's `remove_extra_whitespaces`: drop leading and trailing spaces and collapse
/// each run of spaces into one (only U+0020; tabs and newlines are left alone).
inline std::string collapse_spaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(c);
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

/// llama2.c run.c `encode` transcribed literally (O(n²) merge loop over a sorted vocabulary), as
/// an independent check of LlamaTokenizer's heap-based merging. No BOS/EOS.
inline std::vector<int> naive_llama_encode(const LlamaTokenizer& tok, const std::string& text) {
  std::map<std::string, int> sorted_vocab;  // run.c: a sorted array searched with bsearch
  for (int id = 0; id < tok.vocab_size(); ++id) sorted_vocab.emplace(tok.piece(id), id);
  auto lookup = [&](const std::string& s) {
    const auto it = sorted_vocab.find(s);
    return it == sorted_vocab.end() ? -1 : it->second;
  };
  std::vector<int> ids;
  if (!text.empty()) ids.push_back(lookup(" "));
  for (size_t i = 0; i < text.size();) {
    size_t j = i + 1;
    while (j < text.size() && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80 && j - i < 4) {
      ++j;
    }
    const int id = lookup(text.substr(i, j - i));
    if (id >= 0) {
      ids.push_back(id);
    } else {
      for (size_t k = i; k < j; ++k) ids.push_back(static_cast<unsigned char>(text[k]) + 3);
    }
    i = j;
  }
  while (true) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (int i = 0; i + 1 < static_cast<int>(ids.size()); ++i) {
      const int id = lookup(tok.piece(ids[i]) + tok.piece(ids[i + 1]));
      if (id != -1 && tok.score(id) > best_score) {
        best_score = tok.score(id);
        best_id = id;
        best_idx = i;
      }
    }
    if (best_idx == -1) break;
    ids[best_idx] = best_id;
    ids.erase(ids.begin() + best_idx + 1);
  }
  return ids;
}

/// A random byte string of `n` bytes drawn from `alphabet` (the project's seeded RNG).
inline std::string random_text(uint64_t seed, size_t n, const std::vector<std::string>& alphabet) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i) {
    const double u = uniform01(seed, i, RngStream::kWorkload);
    s += alphabet[static_cast<size_t>(u * alphabet.size()) % alphabet.size()];
  }
  return s;
}

}  // namespace nanoserve::testing
