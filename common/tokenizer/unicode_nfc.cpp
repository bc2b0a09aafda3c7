#include "common/tokenizer/unicode_nfc.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "common/error.h"

namespace nanoserve {

std::string nfc_normalize(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw InvalidArgument(std::string("ICU NFC: ") + u_errorName(status));
  const icu::UnicodeString in =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  if (nfc->isNormalized(in, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  const icu::UnicodeString out = nfc->normalize(in, status);
  if (U_FAILURE(status)) throw InvalidArgument(std::string("ICU NFC: ") + u_errorName(status));
  std::string s;
  out.toUTF8String(s);
  return s;
}

}  // namespace nanoserve
