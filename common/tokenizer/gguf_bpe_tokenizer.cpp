// A GGUF `gpt2` vocabulary (tokens, token types, merges, `tokenizer.ggml.pre`) as the
// HfBpeSpec its tokenizer.json would give.

#include <unordered_map>

#include "common/error.h"
#include "common/gguf_token_type.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"

namespace nanoserve {

std::unique_ptr<HfBpeTokenizer> make_gguf_bpe_tokenizer(const std::string& file,
                                                        std::vector<std::string> tokens,
                                                        const std::vector<int32_t>& token_types,
                                                        const std::vector<std::string>& merges,
                                                        const std::string& pre, int64_t bos_id,
                                                        int64_t eos_id) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0 || n > kMaxHfVocab) {
    throw LoadError(file, "tokenizer.ggml.tokens",
                    std::to_string(n) + " tokens: must be 1 to " + std::to_string(kMaxHfVocab));
  }
  if (!token_types.empty() && int64_t(token_types.size()) != n) {
    throw LoadError(file, "tokenizer.ggml.token_type",
                    std::to_string(token_types.size()) + " entries for " + std::to_string(n) +
                        " tokens");
  }
  if (bos_id < -1 || bos_id >= n) {
    throw LoadError(file, "tokenizer.ggml.bos_token_id", std::to_string(bos_id) + " is outside the vocabulary");
  }
  if (eos_id < 0 || eos_id >= n) {
    throw LoadError(file, "tokenizer.ggml.eos_token_id",
                    eos_id < 0 ? "is missing" : std::to_string(eos_id) + " is outside the vocabulary");
  }
  HfBpeSpec spec;
  try {
    spec.pre_tokenizer = gguf_pre_tokenizer(pre.empty() ? "default" : pre);
  } catch (const InvalidArgument& e) {
    throw LoadError(file, "tokenizer.ggml.pre", e.what());
  }
  spec.byte_level = true;
  // llama.cpp's Llama 3 vocabulary takes a word found whole in the vocabulary as one token,
  // as Llama 3's tokenizer.json says (ignore_merges); Qwen2's file asks for NFC.
  spec.ignore_merges = pre == "llama-bpe" || pre == "llama3";
  if (pre == "qwen2") spec.normalizer.push_back({HfNormalizerStep::Kind::kNfc, "", ""});
  spec.unk_id = -1;
  spec.bos_id = static_cast<int>(bos_id);
  spec.eos_id = static_cast<int>(eos_id);
  spec.decoder.push_back({HfDecoderStep::Kind::kByteLevel, "", "", 0});
  std::unordered_map<std::string, int> ids;
  ids.reserve(tokens.size());
  for (int id = 0; id < n; ++id) {
    const std::string& t = tokens[id];
    const auto type = token_types.empty() ? GgufTokenType::kNormal
                                          : static_cast<GgufTokenType>(token_types[id]);
    if (type == GgufTokenType::kControl || type == GgufTokenType::kUserDefined) {
      if (!t.empty()) {
        spec.added_tokens.push_back({id, t, /*normalized=*/false, type == GgufTokenType::kControl});
      }
    }
    if (t.empty()) continue;  // an unused slot
    if (!ids.emplace(t, id).second) {
      throw LoadError(file, "tokenizer.ggml.tokens",
                      "'" + t + "' appears at ids " + std::to_string(ids[t]) + " and " +
                          std::to_string(id));
    }
  }
  spec.merges.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    const size_t space = m.find(' ');
    const std::string where = "tokenizer.ggml.merges[" + std::to_string(rank) + "]";
    if (space == std::string::npos || m.find(' ', space + 1) != std::string::npos) {
      throw LoadError(file, where, "'" + m + "' is not two tokens separated by one space");
    }
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    int merged_ids[3];
    const std::string parts[3] = {left, right, left + right};
    for (int k = 0; k < 3; ++k) {
      const auto it = ids.find(parts[k]);
      if (it == ids.end()) throw LoadError(file, where, "'" + parts[k] + "' is not a token");
      merged_ids[k] = it->second;
    }
    spec.merges.push_back({merged_ids[0], merged_ids[1], merged_ids[2]});
  }
  spec.vocab = std::move(tokens);
  return std::make_unique<HfBpeTokenizer>(std::move(spec));
}

}  // namespace nanoserve
