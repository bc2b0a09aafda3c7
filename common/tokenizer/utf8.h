#pragma once
/// \file
/// \brief The UTF-8 facts the tokenizers need: where a character ends, whether bytes are
/// well-formed UTF-8, and the lossy repair of bytes that are not (Unicode 15, table 3-7: no overlongs, no surrogates, ≤ U+10FFFF).

#include <cstddef>
#include <string>
#include <string_view>

namespace nanoserve {

/// \brief Length (1–4) of the well-formed UTF-8 character starting at `s[i]`, or 0 if the
/// bytes there are not one. Requires `i < s.size()`.
inline size_t utf8_char_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 or F5..FF
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

/// \brief Whether `s` is entirely well-formed UTF-8.
inline bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_char_length(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

/// \brief `s` with every ill-formed sequence replaced by U+FFFD, one per *maximal subpart*
/// (Unicode 15 §3.9, the WHATWG decoder, Rust's `from_utf8_lossy`): a lead byte and the
/// continuation bytes that could still complete it count as one, e.g. `E2 82` → one U+FFFD,
/// `FF` → one, `ED A0 80` (a surrogate) → three. Valid text is returned unchanged.
inline std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_char_length(s, i);
    if (len > 0) {
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    // The maximal subpart: the lead byte, then continuation bytes while they stay in range.
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    size_t k = 1;
    for (; k <= need && i + k < s.size(); ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      if (b < lo || b > hi) break;
      lo = 0x80;
      hi = 0xBF;
    }
    out.append("\xEF\xBF\xBD");
    i += k;
  }
  return out;
}

}  // namespace nanoserve
