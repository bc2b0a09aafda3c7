#include "common/tokenizer/llama_tokenizer.h"

#include <optional>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/tokenizer/pair_merge.h"

namespace nanoserve {
namespace {

// run.c starts its search for the best pair at `float best_score = -1e10` and only takes a
// pair whose score is strictly greater, so a piece scored at or below it is never merged.
constexpr float kMergeScoreFloor = -1e10f;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The byte of a piece spelled exactly "<0xHH>", else −1. (run.c uses sscanf("<0x%02hhX>"),
// which would also accept e.g. "<0x4" or "<0x41junk"; no real vocabulary has such pieces.)
int byte_of_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  const int hi = hex_digit(piece[3]), lo = hex_digit(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string byte_piece(int byte) {
  static const char* kHex = "0123456789ABCDEF";
  return std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + '>';
}

}  // namespace

LlamaTokenizer::LlamaTokenizer(LlamaVocab vocab) : vocab_(std::move(vocab)) {
  const int n = static_cast<int>(vocab_.pieces.size());
  if (n == 0) throw InvalidArgument("LlamaTokenizer: empty vocabulary");
  if (vocab_.scores.size() != vocab_.pieces.size() ||
      (!vocab_.matchable.empty() && vocab_.matchable.size() != vocab_.pieces.size())) {
    throw InvalidArgument("LlamaTokenizer: pieces, scores and matchable differ in length");
  }
  for (int id : {vocab_.bos_id, vocab_.eos_id, vocab_.unk_id}) {
    if (id < 0 || id >= n) {
      throw InvalidArgument("LlamaTokenizer: special id " + std::to_string(id) +
                            " outside [0, " + std::to_string(n) + ")");
    }
  }
  piece_to_id_.reserve(vocab_.pieces.size());
  for (int id = 0; id < n; ++id) {
    if (vocab_.matchable.empty() || vocab_.matchable[id]) {
      piece_to_id_.emplace(vocab_.pieces[id], id);  // the first id of a repeated piece wins
    }
  }
  byte_to_id_.fill(-1);
  for (int id = 0; id < n; ++id) {
    const std::string& p = vocab_.pieces[id];
    const int b = byte_of_piece(p);
    if (b >= 0 && byte_to_id_[b] < 0 && p == byte_piece(b)) byte_to_id_[b] = id;
  }
  for (int& id : byte_to_id_) {
    if (id < 0) id = vocab_.unk_id;
  }
  space_id_ = find_piece(" ");
}

int LlamaTokenizer::find_piece(const std::string& piece) const {
  const auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

void LlamaTokenizer::check_id(int id) const {
  if (id < 0 || id >= vocab_size()) {
    throw InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                          std::to_string(vocab_size()) + ")");
  }
}

const std::string& LlamaTokenizer::piece(int id) const {
  check_id(id);
  return vocab_.pieces[id];
}

float LlamaTokenizer::score(int id) const {
  check_id(id);
  return vocab_.scores[id];
}

std::vector<int> LlamaTokenizer::encode(std::string_view text, bool add_bos,
                                        bool add_eos) const {
  std::vector<int> ids;
  ids.reserve(text.size() + 1);
  // (1) The dummy prefix, only for non-empty text (run.c: `if (text[0] != '\0')`).
  if (!text.empty()) ids.push_back(space_id_ >= 0 ? space_id_ : byte_to_id_[' ']);

  // (2) Code points: a byte and the continuation bytes (10xxxxxx) after it, 4 bytes at most.
  std::string unit;
  for (size_t i = 0; i < text.size();) {
    size_t j = i + 1;
    while (j < text.size() && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80 &&
           j - i < 4) {
      ++j;
    }
    unit.assign(text.substr(i, j - i));
    const int id = find_piece(unit);
    if (id >= 0) {
      ids.push_back(id);
    } else {
      for (unsigned char byte : unit) ids.push_back(byte_to_id_[byte]);  // byte fallback
    }
    i = j;
  }

  // (3) Score-ordered merges of adjacent pieces.
  std::string joined;
  ids = merge_adjacent_pairs(ids, [&](int left, int right) -> std::optional<MergeCandidate> {
    joined.assign(vocab_.pieces[left]).append(vocab_.pieces[right]);
    const int id = find_piece(joined);
    if (id < 0 || !(vocab_.scores[id] > kMergeScoreFloor)) return std::nullopt;
    return MergeCandidate{vocab_.scores[id], id};
  });

  if (add_bos) ids.insert(ids.begin(), vocab_.bos_id);
  if (add_eos) ids.push_back(vocab_.eos_id);
  return ids;
}

std::string LlamaTokenizer::decode_token(int prev_token, int token) const {
  check_id(token);
  std::string_view piece = vocab_.pieces[token];
  // SentencePiece's decoder drops the dummy-prefix space of the first piece after BOS.
  if (prev_token == vocab_.bos_id && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  const int byte = byte_of_piece(piece);
  if (byte >= 0) return std::string(1, static_cast<char>(byte));
  return std::string(piece);
}

}  // namespace nanoserve
