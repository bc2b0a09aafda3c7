#pragma once
/// \file
/// \brief `TextStream`: a choice's tokens turned into text that is safe to send while it is
/// still being generated. Two things must not reach the client early:
///
///  - a stop string, even split over several tokens: text that could be the start of one is
///    held back until the next tokens show it is not (the engine ends the request at a match;
///    the text before the match is the answer, the stop string itself is removed);
///  - half a UTF-8 character: byte tokens can split a character, and JSON needs whole ones.
///
///     tokens:   "Hello" " wor" "ld" "\n" "Bye"     stop: ["\nB"]
///     text:     Hello world\nBye
///     sent:     "Hello" " wor" "ld"  ""   ""        ("\n" might start "\nB": held back)
///     finish:   final text "Hello world" — nothing more to send (the match is cut)

#include <functional>
#include <string>
#include <vector>

namespace nanoserve::server {

/// \brief Incremental, stop-string-safe text of one choice.
class TextStream {
 public:
  /// \brief Turns a token into text given the token before it (`Tokenizer::decode_token`).
  using Decode = std::function<std::string(int prev_token, int token)>;

  /// \brief `prev_token`: the prompt's last token; tokens in `stop_ids` end the text and add
  /// none; `stop` strings are cut from it.
  TextStream(Decode decode, int prev_token, std::vector<int> stop_ids,
             std::vector<std::string> stop);

  /// \brief Adds a token; returns the text that may be sent now (possibly empty).
  std::string push(int token);
  /// \brief At the end: the text not sent yet (held-back text that was no stop string, the
  /// tail of a split character).
  std::string finish();
  /// \brief The text of the token alone (for logprobs), as `decode` gives it.
  const std::string& last_piece() const { return last_piece_; }
  /// \brief The answer so far: everything up to the first stop string.
  std::string final_text() const { return text_.substr(0, stop_at_); }
  /// \brief Bytes sent so far.
  size_t sent() const { return sent_; }

 private:
  size_t safe_end() const;

  Decode decode_;
  int prev_;
  std::vector<int> stop_ids_;
  std::vector<std::string> stop_;
  std::string text_;        // all decoded text (past a stop string too)
  std::string last_piece_;
  size_t stop_at_ = std::string::npos;  // where the first stop string starts
  size_t sent_ = 0;
  bool ended_ = false;  // a stop token or stop string was seen
};

/// \brief Length of the longest prefix of `s` that does not end inside a UTF-8 character
/// (a lead byte whose continuation bytes have not all arrived).
size_t utf8_complete_prefix(const std::string& s);

}  // namespace nanoserve::server
