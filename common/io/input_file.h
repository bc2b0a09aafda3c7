#pragma once
/// \file
/// \brief Opening the files a user names (models, tokenizers, texts, traces, chat scripts):
/// regular files only, opened without blocking, sizes checked against a stated limit before
/// anything is read, and one message per reason a path cannot be read.
///
/// Why a FIFO is refused rather than read: `open()` of a named pipe with no writer blocks
/// forever, and a pipe has no size to check against a limit. A directory gets its own message
/// ("is a directory") instead of whatever a stream reports for it (a size of 2^63 - 1 bytes,
/// or an empty read that a parser then misreads).

#include <cstdint>
#include <string>

namespace nanoserve {

/// \brief An open, read-only descriptor of a regular file; closed on destruction.
class InputFile {
 public:
  /// \brief Opens `path` (O_NONBLOCK, so a FIFO cannot block) and checks it is a regular
  /// file. `what` names the input in messages ("tokenizer", "trace", …). Throws
  /// `LoadError(path, "file", …)`: cannot open (with strerror), is a directory, or is not a
  /// regular file (FIFO, socket, device).
  InputFile(const std::string& path, const std::string& what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// \brief The descriptor (blocking mode restored after the checks).
  int fd() const { return fd_; }
  /// \brief The file size in bytes.
  uint64_t size() const { return size_; }
  /// \brief The path it was opened with.
  const std::string& path() const { return path_; }

  /// \brief Throws `LoadError(path, "file", …)` naming the size and the limit when the file
  /// is larger than `max_bytes` bytes.
  void check_size(uint64_t max_bytes) const;
  /// \brief Reads the whole file (after `check_size(max_bytes)`); every read is checked.
  std::string read_all(uint64_t max_bytes) const;
  /// \brief Reads up to `n` bytes at offset 0 (fewer when the file is shorter).
  std::string read_prefix(std::size_t n) const;

 private:
  std::string path_;
  std::string what_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// \brief The whole of the regular file `path`, refused (with `LoadError`) when it cannot be
/// opened, is not a regular file, or holds more than `max_bytes` bytes; `what` names it.
std::string read_input_file(const std::string& path, const std::string& what,
                            uint64_t max_bytes);

/// \brief "12.5 MiB (13107200 bytes)": a size for limit messages.
std::string describe_bytes(uint64_t bytes);

}  // namespace nanoserve
