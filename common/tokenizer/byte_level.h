#pragma once
/// \file
/// \brief GPT-2's byte-to-unicode alphabet, the one every byte-level BPE (GPT-2, SmolLM2,
/// Llama 3, Qwen2) writes its vocabulary in.
///
/// Each of the 256 bytes is given a printable character so that a token is a plain string:
/// `!`…`~`, `¡`…`¬` and `®`…`ÿ` stand for themselves, the other 68 bytes (controls, space,
/// 0x7F–0xA0, 0xAD) for U+0100 onwards in byte order — so the space 0x20 is `Ġ` (U+0120) and
/// the newline 0x0A is `Ċ` (U+010A).

#include <string>
#include <string_view>

namespace nanoserve {

/// \brief The UTF-8 text of the character that stands for `byte`.
const std::string& byte_level_char(unsigned char byte);

/// \brief `text`'s bytes, each replaced by its byte-level character.
std::string to_byte_level(std::string_view text);

/// \brief The bytes a byte-level token stands for, or false (and `out` untouched) when one of
/// its characters is not in the alphabet (an added token such as `<|im_end|>` whose text is
/// not byte-level; `tokenizers` then keeps the token's own bytes).
bool from_byte_level(std::string_view token, std::string& out);

}  // namespace nanoserve
