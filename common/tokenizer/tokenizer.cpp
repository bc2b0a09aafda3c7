#include "common/tokenizer/tokenizer.h"

namespace nanoserve {

std::string Tokenizer::decode(const std::vector<int>& tokens) const {
  std::string out;
  int prev = bos_id();
  for (int t : tokens) {
    if (t != bos_id() && t != eos_id()) out += decode_token(prev, t);
    prev = t;
  }
  return out;
}

}  // namespace nanoserve
