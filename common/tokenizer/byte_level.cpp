#include "common/tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

#include "common/tokenizer/utf8.h"

namespace nanoserve {
namespace {

std::string encode_utf8(unsigned cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {  // the alphabet stays below U+0800: two bytes
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

struct Alphabet {
  std::array<std::string, 256> chars;
  std::unordered_map<std::string, unsigned char> bytes;
  Alphabet() {
    unsigned next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      chars[b] = encode_utf8(printable ? b : next++);
      bytes.emplace(chars[b], static_cast<unsigned char>(b));
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

const std::string& byte_level_char(unsigned char byte) { return alphabet().chars[byte]; }

std::string to_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char b : text) out += alphabet().chars[b];
  return out;
}

bool from_byte_level(std::string_view token, std::string& out) {
  std::string bytes;
  const auto& map = alphabet().bytes;
  for (size_t i = 0; i < token.size();) {
    size_t len = utf8_char_length(token, i);
    if (len == 0) return false;
    const auto it = map.find(std::string(token.substr(i, len)));
    if (it == map.end()) return false;
    bytes += static_cast<char>(it->second);
    i += len;
  }
  out += bytes;
  return true;
}

}  // namespace nanoserve
