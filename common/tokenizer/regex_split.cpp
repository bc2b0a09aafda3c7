#include "common/tokenizer/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/error.h"

namespace nanoserve {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Impl() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

RegexSplitter::RegexSplitter(const std::string& pattern)
    : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  if (pattern.empty() || pattern.size() > kMaxPatternBytes) {
    throw InvalidArgument("regex pattern of " + std::to_string(pattern.size()) +
                          " bytes: must be 1 to " + std::to_string(kMaxPatternBytes));
  }
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!impl_->code) {
    throw InvalidArgument("regex '" + pattern + "' does not compile at offset " +
                          std::to_string(offset) + ": " + pcre2_message(error));
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back if absent
  impl_->context = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(impl_->context, kMatchLimit);
}

RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<std::string>& out) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, gap_start = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md,
                               impl_->context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      throw InvalidArgument("regex '" + pattern_ + "': " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t start = ov[0], end = ov[1];
    if (end == start) {  // empty match: step over one character
      if (start >= text.size()) break;
      pos = start + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (start > gap_start) out.emplace_back(text.substr(gap_start, start - gap_start));
    out.emplace_back(text.substr(start, end - start));
    gap_start = pos = end;
  }
  pcre2_match_data_free(md);
  if (gap_start < text.size()) out.emplace_back(text.substr(gap_start));
}

}  // namespace nanoserve
