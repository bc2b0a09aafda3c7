#include "common/tokenizer/byte_tokenizer.h"

#include "common/error.h"

namespace nanoserve {

namespace {
constexpr int kFirstByteId = 3;
}  // namespace

ByteTokenizer::ByteTokenizer(int vocab_size) : vocab_size_(vocab_size) {
  if (vocab_size < kFirstByteId + 256) {
    throw InvalidArgument("ByteTokenizer: vocab_size " + std::to_string(vocab_size) +
                          " is smaller than the 259 ids it needs (3 specials + 256 bytes)");
  }
}

std::vector<int> ByteTokenizer::encode(std::string_view text, bool add_bos, bool add_eos) const {
  std::vector<int> ids;
  ids.reserve(text.size() + 2);
  if (add_bos) ids.push_back(bos_id());
  for (unsigned char c : text) ids.push_back(kFirstByteId + c);
  if (add_eos) ids.push_back(eos_id());
  return ids;
}

std::string ByteTokenizer::decode_token(int /*prev_token*/, int token) const {
  if (token < 0 || token >= vocab_size_) {
    throw InvalidArgument("ByteTokenizer: token id " + std::to_string(token) +
                          " is outside the vocabulary [0, " + std::to_string(vocab_size_) + ")");
  }
  if (token < kFirstByteId || token >= kFirstByteId + 256) return "";
  return std::string(1, static_cast<char>(token - kFirstByteId));
}

}  // namespace nanoserve
