#pragma once
/// \file
/// \brief Unicode NFC normalization (the `NFC` normalizer of Qwen2's `tokenizer.json`),
/// through utf8proc (Debian `libutf8proc-dev`; its tables are ~0.5 MB, where ICU's data
/// would add ~30 MB to every statically linked binary).

#include <string>
#include <string_view>

namespace nanoserve {

/// \brief `text` (valid UTF-8) in Normalization Form C; throws `InvalidArgument` if utf8proc
/// fails.
std::string nfc_normalize(std::string_view text);

}  // namespace nanoserve
