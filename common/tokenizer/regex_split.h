#pragma once
/// \file
/// \brief `RegexSplitter`: a pre-tokenizer pattern compiled by PCRE2 (Debian `libpcre2-dev`)
/// in UTF mode with Unicode properties (`\p{L}`, `\p{N}`, Unicode `\s`), the regex engine the
/// `Split` pre-tokenizer of `tokenizer.json` needs (`tokenizers` itself uses Oniguruma).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nanoserve {

/// \brief A compiled pattern that cuts text into the pieces `Split` with behaviour `Isolated`
/// makes: every match is a piece and so is every non-empty gap between matches.
class RegexSplitter {
 public:
  /// \brief Compiles `pattern` (at most `kMaxPatternBytes`); throws `InvalidArgument` with
  /// PCRE2's message and the offset when it does not compile.
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  /// \brief Appends the pieces of `text` (valid UTF-8) to `out`, in order; their
  /// concatenation is `text`. Empty matches are skipped. Throws `InvalidArgument` if a match
  /// exceeds PCRE2's backtracking limit (`kMatchLimit`), instead of running for minutes.
  void split(std::string_view text, std::vector<std::string>& out) const;

  /// \brief The pattern as written.
  const std::string& pattern() const { return pattern_; }

  /// \brief The longest pattern accepted (real ones are under 200 bytes).
  static constexpr size_t kMaxPatternBytes = 4096;
  /// \brief PCRE2's match limit per match attempt (backtracking steps).
  static constexpr unsigned kMatchLimit = 10'000'000;

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nanoserve
