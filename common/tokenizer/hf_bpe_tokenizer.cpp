#include "common/tokenizer/hf_bpe_tokenizer.h"

#include <optional>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/pair_merge.h"
#include "common/tokenizer/unicode_nfc.h"
#include "common/tokenizer/utf8.h"

namespace nanoserve {
namespace {

void replace_all(std::string& s, const std::string& pattern, const std::string& content) {
  if (pattern.empty()) return;
  std::string out;
  size_t from = 0;
  for (size_t at = s.find(pattern); at != std::string::npos; at = s.find(pattern, from)) {
    out.append(s, from, at - from).append(content);
    from = at + pattern.size();
  }
  if (from == 0) return;  // no occurrence
  out.append(s, from, std::string::npos);
  s = std::move(out);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The byte of a "<0xHH>" token (the ByteFallback decoder accepts either hex case), else −1.
int byte_of_token(std::string_view t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

const char* const kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Cuts `s` at the added tokens `patterns` (leftmost match first, the longest at that
// position) and calls on_text(piece) for the text between them, on_token(id) for each match.
// `next[k]` caches where pattern k occurs next, so the scan stays linear in the text.
template <class OnText, class OnToken>
void split_on_added(const std::string& s, const std::vector<std::pair<std::string, int>>& patterns,
                    OnText&& on_text, OnToken&& on_token) {
  std::vector<size_t> next;
  for (const auto& pattern : patterns) next.push_back(s.find(pattern.first));
  size_t pos = 0;
  while (pos < s.size()) {
    size_t best_at = std::string::npos, best_len = 0;
    int best_id = -1;
    for (size_t k = 0; k < patterns.size(); ++k) {
      const std::string& p = patterns[k].first;
      if (next[k] != std::string::npos && next[k] < pos) next[k] = s.find(p, pos);
      if (next[k] < best_at || (next[k] == best_at && next[k] != std::string::npos &&
                                p.size() > best_len)) {
        best_at = next[k];
        best_len = p.size();
        best_id = patterns[k].second;
      }
    }
    if (best_at == std::string::npos) {
      on_text(std::string_view(s).substr(pos));
      return;
    }
    if (best_at > pos) on_text(std::string_view(s).substr(pos, best_at - pos));
    on_token(best_id);
    pos = best_at + best_len;
  }
}

}  // namespace

HfBpeTokenizer::HfBpeTokenizer(HfBpeSpec spec) : spec_(std::move(spec)) {
  const int n = vocab_size();
  auto check = [&](int id, const char* what) {
    if (id < 0 || id >= n) {
      throw InvalidArgument(std::string("HfBpeTokenizer: ") + what + " id " +
                            std::to_string(id) + " outside [0, " + std::to_string(n) + ")");
    }
  };
  if (spec_.unk_id != -1) check(spec_.unk_id, "unk");
  if (spec_.bos_id != -1) check(spec_.bos_id, "bos");
  check(spec_.eos_id, "eos");
  piece_to_id_.reserve(spec_.vocab.size());
  for (int id = 0; id < n; ++id) {
    if (!spec_.vocab[id].empty()) piece_to_id_.emplace(spec_.vocab[id], id);  // "": unused id
  }
  for (size_t rank = 0; rank < spec_.merges.size(); ++rank) {
    const auto& [left, right, merged] = spec_.merges[rank];
    check(left, "merge");
    check(right, "merge");
    check(merged, "merge");
    // A repeated pair takes its last rank, as `tokenizers` collects merges into a map.
    merge_rank_[(uint64_t(uint32_t(left)) << 32) | uint32_t(right)] = {int(rank), merged};
  }
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    byte_to_id_[b] = find_piece(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + '>');
  }
  if (spec_.metaspace) {
    const std::string& r = spec_.metaspace->replacement;
    if (r.empty() || r.find("\\E") != std::string::npos) {
      throw InvalidArgument("HfBpeTokenizer: Metaspace replacement '" + r + "' is unusable");
    }
    // Words as `split` with MergedWithNext cuts them: a run without "▁", or "▁" and what
    // follows up to the next one.
    const std::string q = "\\Q" + r + "\\E";
    metaspace_words_ = std::make_shared<const RegexSplitter>("(?s)(?:(?!" + q + ").)+|" + q +
                                                             "(?:(?!" + q + ").)*");
  }
  decoder_input_ = spec_.vocab;
  for (const HfAddedToken& t : spec_.added_tokens) {
    check(t.id, "added token");
    if (!t.normalized) {
      decoder_input_[t.id] = t.content;
      if (!t.content.empty()) raw_patterns_.emplace_back(t.content, t.id);
      continue;
    }
    std::string pattern = normalize(t.content);
    decoder_input_[t.id] = pattern;
    if (!pattern.empty()) added_patterns_.emplace_back(std::move(pattern), t.id);
  }
}

int HfBpeTokenizer::find_piece(const std::string& piece) const {
  const auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

void HfBpeTokenizer::check_id(int id) const {
  if (id < 0 || id >= vocab_size()) {
    throw InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                          std::to_string(vocab_size()) + ")");
  }
}

const std::string& HfBpeTokenizer::piece(int id) const {
  check_id(id);
  return spec_.vocab[id];
}

std::string HfBpeTokenizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const HfNormalizerStep& step : spec_.normalizer) {
    if (step.kind == HfNormalizerStep::Kind::kPrepend) {
      if (!s.empty()) s.insert(0, step.content);
    } else if (step.kind == HfNormalizerStep::Kind::kNfc) {
      s = nfc_normalize(s);
    } else {
      replace_all(s, step.pattern, step.content);
    }
  }
  return s;
}

void HfBpeTokenizer::encode_segment(std::string_view segment, std::vector<int>& out) const {
  // One symbol per character. `tokenizers` (BPE::merge_word) holds an unknown character back
  // as a pending <unk> that the next unknown character extends (fuse_unk) and the next known
  // character flushes; byte-fallback tokens are appended without flushing it. That ordering
  // is reproduced here as is, even though it can put bytes before an earlier <unk>.
  std::vector<int> ids;
  ids.reserve(segment.size());
  bool pending_unk = false;
  std::string ch;
  for (size_t i = 0; i < segment.size();) {
    size_t len = utf8_char_length(segment, i);
    if (len == 0) len = 1;  // a stray byte is a character of its own (never in the vocab)
    ch.assign(segment.substr(i, len));
    i += len;
    const int id = find_piece(ch);
    if (id >= 0) {
      if (pending_unk) ids.push_back(spec_.unk_id);
      pending_unk = false;
      ids.push_back(id);
      continue;
    }
    if (spec_.byte_fallback) {
      bool all_bytes = true;
      for (unsigned char b : ch) all_bytes = all_bytes && byte_to_id_[b] >= 0;
      if (all_bytes) {
        for (unsigned char b : ch) ids.push_back(byte_to_id_[b]);
        continue;
      }
    }
    if (spec_.unk_id < 0) continue;  // no unk token: `tokenizers` drops the character
    if (pending_unk && !spec_.fuse_unk) ids.push_back(spec_.unk_id);
    pending_unk = true;
  }
  if (pending_unk) ids.push_back(spec_.unk_id);

  const std::vector<int> merged =
      merge_adjacent_pairs(ids, [&](int left, int right) -> std::optional<MergeCandidate> {
        const auto it = merge_rank_.find((uint64_t(uint32_t(left)) << 32) | uint32_t(right));
        if (it == merge_rank_.end()) return std::nullopt;
        return MergeCandidate{-static_cast<double>(it->second[0]), it->second[1]};
      });
  out.insert(out.end(), merged.begin(), merged.end());
}

void HfBpeTokenizer::encode_metaspace(std::string_view text, bool text_start,
                                      std::vector<int>& out) const {
  const HfMetaspace& m = *spec_.metaspace;
  std::string s(text);
  replace_all(s, " ", m.replacement);
  const bool prepend = m.prepend == HfMetaspace::Prepend::kAlways ||
                       (m.prepend == HfMetaspace::Prepend::kFirst && text_start);
  if (prepend && s.compare(0, m.replacement.size(), m.replacement) != 0) s.insert(0, m.replacement);
  if (!m.split) return encode_segment(s, out);
  std::vector<std::string> words;
  metaspace_words_->split(s, words);
  for (const std::string& word : words) encode_segment(word, out);
}

void HfBpeTokenizer::encode_words(std::string_view text, bool text_start,
                                  std::vector<int>& out) const {
  if (spec_.metaspace) return encode_metaspace(text, text_start, out);
  if (spec_.pre_tokenizer.empty() && !spec_.byte_level) return encode_segment(text, out);
  for (std::string& word : pre_tokenize(spec_.pre_tokenizer, text)) {
    if (spec_.byte_level) word = to_byte_level(word);
    if (spec_.ignore_merges) {
      if (const int id = find_piece(word); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    encode_segment(word, out);
  }
}

void HfBpeTokenizer::encode_normalized(std::string_view text, bool text_start,
                                       std::vector<int>& out) const {
  const std::string n = normalize(text);
  split_on_added(
      n, added_patterns_,
      [&](std::string_view piece) {
        encode_words(piece, text_start && piece.data() == n.data(), out);
      },
      [&](int id) { out.push_back(id); });
}

std::vector<int> HfBpeTokenizer::encode(std::string_view text, bool add_bos,
                                        bool add_eos) const {
  // `tokenizers` takes a string: bytes that are not UTF-8 reach it as U+FFFD.
  const std::string s = utf8_lossy(text);
  std::vector<int> ids;
  if (add_bos && spec_.bos_id >= 0) ids.push_back(spec_.bos_id);
  // Added tokens with normalized=false are found in the raw text first; the normalizer and the
  // normalized ones then see each piece between them (as `AddedVocabulary` does).
  // "The start of the text" (Metaspace's prepend_scheme first) is offset 0 of `text`: a piece
  // after an added token is not at the start.
  split_on_added(
      s, raw_patterns_,
      [&](std::string_view piece) { encode_normalized(piece, piece.data() == s.data(), ids); },
      [&](int id) { ids.push_back(id); });
  if (add_eos) ids.push_back(spec_.eos_id);
  return ids;
}

std::vector<std::string> HfBpeTokenizer::run_decoder(std::vector<std::string> tokens,
                                                     bool text_start, bool streaming) const {
  bool fused = false;
  for (const HfDecoderStep& step : spec_.decoder) {
    switch (step.kind) {
      case HfDecoderStep::Kind::kReplace:
        for (std::string& t : tokens) replace_all(t, step.pattern, step.content);
        break;
      case HfDecoderStep::Kind::kByteFallback: {
        // A run of byte tokens becomes its bytes if they are valid UTF-8, else one U+FFFD per
        // byte. Streaming one token at a time, the raw byte is returned instead: the caller
        // concatenates the bytes of a multi-byte character.
        std::vector<std::string> out;
        std::string run;
        size_t run_tokens = 0;
        auto flush = [&] {
          if (run_tokens == 0) return;
          if (streaming || is_valid_utf8(run)) {
            out.push_back(run);
          } else {
            for (size_t k = 0; k < run_tokens; ++k) out.emplace_back(kReplacementChar);
          }
          run.clear();
          run_tokens = 0;
        };
        for (std::string& t : tokens) {
          const int b = byte_of_token(t);
          if (b >= 0) {
            run.push_back(static_cast<char>(b));
            ++run_tokens;
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(out);
        break;
      }
      case HfDecoderStep::Kind::kByteLevel: {
        // Each token back to its bytes (a token with a character outside the alphabet, such
        // as an added token, gives its own bytes), then one text. Streaming keeps the bytes
        // as they are: the caller joins the bytes of a character split across tokens.
        std::string all;
        for (const std::string& t : tokens) {
          if (!from_byte_level(t, all)) all += t;
        }
        tokens.assign(1, streaming ? std::move(all) : utf8_lossy(all));
        fused = true;
        break;
      }
      case HfDecoderStep::Kind::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        fused = true;
        break;
      }
      case HfDecoderStep::Kind::kMetaspace:
        // tokenizers' Metaspace::decode_chain: the first token of the list loses every
        // replacement character (unless prepend_scheme is never), the others turn them into
        // spaces. A streamed token is the first only right after BOS.
        for (size_t i = 0; i < tokens.size(); ++i) {
          const bool first = i == 0 && text_start && step.start != 0;
          replace_all(tokens[i], step.pattern, first ? "" : " ");
        }
        break;
      case HfDecoderStep::Kind::kStrip:
        // After Fuse the one token is the whole text, so the strip touches only its start;
        // a streamed token is at the start of the text only right after BOS.
        if (fused && !text_start) break;
        for (std::string& t : tokens) {
          size_t cut = 0;
          for (int k = 0; k < step.start && t.compare(cut, step.content.size(), step.content) == 0;
               ++k) {
            cut += step.content.size();
          }
          t.erase(0, cut);
        }
        break;
    }
  }
  return tokens;
}

std::string HfBpeTokenizer::decode_token(int prev_token, int token) const {
  check_id(token);
  std::string out;
  for (const std::string& t : run_decoder({decoder_input_[token]}, prev_token == spec_.bos_id,
                                          /*streaming=*/true)) {
    out += t;
  }
  return out;
}

std::string HfBpeTokenizer::decode(const std::vector<int>& tokens) const {
  std::vector<std::string> pieces;
  pieces.reserve(tokens.size());
  for (int t : tokens) {
    check_id(t);
    if (t != spec_.bos_id && t != spec_.eos_id) pieces.push_back(decoder_input_[t]);
  }
  std::string out;
  for (const std::string& t : run_decoder(std::move(pieces), true, /*streaming=*/false)) out += t;
  return out;
}

std::string HfBpeTokenizer::decode_all(const std::vector<int>& tokens) const {
  std::vector<std::string> pieces;
  pieces.reserve(tokens.size());
  for (int t : tokens) {
    check_id(t);
    pieces.push_back(decoder_input_[t]);
  }
  std::string out;
  for (const std::string& t : run_decoder(std::move(pieces), true, /*streaming=*/false)) out += t;
  return out;
}

bool HfBpeTokenizer::is_special(int id) const {
  for (const HfAddedToken& t : spec_.added_tokens) {
    if (t.id == id) return t.special;
  }
  return false;
}

}  // namespace nanoserve
