#pragma once
/// \file
/// \brief Unicode NFC normalization (the `NFC` normalizer of Qwen2's `tokenizer.json`),
/// through ICU (Debian `libicu-dev`).

#include <string>
#include <string_view>

namespace nanoserve {

/// \brief `text` (valid UTF-8) in Normalization Form C; throws `InvalidArgument` if ICU fails.
std::string nfc_normalize(std::string_view text);

}  // namespace nanoserve
