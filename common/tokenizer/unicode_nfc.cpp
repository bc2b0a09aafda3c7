#include "common/tokenizer/unicode_nfc.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "common/error.h"

namespace nanoserve {

std::string nfc_normalize(std::string_view text) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
      &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  const std::unique_ptr<utf8proc_uint8_t, void (*)(void*)> owned(out, std::free);
  if (n < 0) throw InvalidArgument(std::string("NFC (utf8proc): ") + utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

}  // namespace nanoserve
