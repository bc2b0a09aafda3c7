#include "common/loaders/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/io/input_file.h"

namespace nanoserve {

MappedFile::MappedFile(const std::string& path, const std::string& what) : path_(path) {
  const InputFile file(path, what);  // a regular file, opened without blocking
  size_ = static_cast<size_t>(file.size());
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (p == MAP_FAILED) {
      throw LoadError(path, "file", std::string("cannot map: ") + std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
}  // the mapping keeps its own reference to the file once the descriptor closes

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace nanoserve
