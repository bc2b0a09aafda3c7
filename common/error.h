#pragma once
/// \file
/// \brief The project's exception types. Input validation throws; `main` catches, prints one
/// line and exits non-zero (docs/style.md, convention 11).

#include <stdexcept>
#include <string>

namespace nanoserve {

/// \brief Base class of every error nanoserve reports to a user.
class Error : public std::runtime_error {
 public:
  /// \brief Wraps a complete, human-readable message.
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// \brief A file (checkpoint, tokenizer, trace…) failed validation.
///
/// The message always names the file and the field, e.g.
/// `stories260K.bin: header.n_layers: 100000 is outside [1, 1024]`.
class LoadError : public Error {
 public:
  /// \brief Builds `file: field: detail`.
  LoadError(const std::string& file, const std::string& field, const std::string& detail)
      : Error(file + ": " + field + ": " + detail), file_(file), field_(field) {}
  /// \brief The file that failed validation.
  const std::string& file() const { return file_; }
  /// \brief The header field, metadata key or tensor name that was wrong.
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  std::string field_;
};

/// \brief A request or flag that cannot be honoured (prompt longer than the context, …).
class InvalidArgument : public Error {
 public:
  /// \brief Wraps a message that names the argument and its value.
  explicit InvalidArgument(const std::string& message) : Error(message) {}
};

}  // namespace nanoserve
