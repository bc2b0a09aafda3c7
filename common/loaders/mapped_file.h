#pragma once
/// \file
/// \brief `MappedFile`: a whole file mapped read-only into memory (POSIX `mmap`), so that
/// loaders read checkpoints of any size without copying them first.

#include <cstddef>
#include <cstdint>
#include <string>

namespace nanoserve {

/// \brief A read-only memory mapping of one regular file; unmapped on destruction.
///
/// An empty file maps to `data() == nullptr, size() == 0` (mmap refuses length 0).
class MappedFile {
 public:
  /// \brief Maps `path`; throws `LoadError(path, "file", …)` when it cannot be opened, is not
  /// a regular file (a directory, a FIFO: see `InputFile`), or cannot be mapped. `what` names
  /// the input in those messages.
  explicit MappedFile(const std::string& path, const std::string& what = "model file");
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  /// \brief Takes over another mapping.
  MappedFile(MappedFile&& other) noexcept;
  /// \brief Releases this mapping and takes over another one.
  MappedFile& operator=(MappedFile&& other) noexcept;

  /// \brief First byte of the file (nullptr when the file is empty).
  const uint8_t* data() const { return data_; }
  /// \brief File size in bytes.
  size_t size() const { return size_; }
  /// \brief The path it was opened with (used in error messages).
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nanoserve
