#include "common/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/format_bytes.h"

namespace nanoserve {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

}  // namespace

std::string describe_bytes(uint64_t bytes) {
  return format_bytes(double(bytes)) + " (" + std::to_string(bytes) + " bytes)";
}

InputFile::InputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    throw LoadError(path, "file", "cannot open the " + what + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw LoadError(path, "file", "cannot stat the " + what + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw LoadError(path, "file",
                    std::string("is ") + file_kind(st.st_mode) + ", not a regular file (the " +
                        what + " must be one)");
  }
  // Reads of a regular file never block; clearing O_NONBLOCK keeps later reads ordinary.
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::check_size(uint64_t max_bytes) const {
  if (size_ > max_bytes) {
    throw LoadError(path_, "file",
                    describe_bytes(size_) + " exceeds the limit for a " + what_ + " of " +
                        describe_bytes(max_bytes));
  }
}

std::string InputFile::read_all(uint64_t max_bytes) const {
  check_size(max_bytes);
  std::string bytes(static_cast<std::size_t>(size_), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd_, bytes.data() + done, bytes.size() - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw LoadError(path_, "file", std::string("read failed: ") + std::strerror(errno));
    if (n == 0) break;  // the file shrank while it was read: parse what is there
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

std::string InputFile::read_prefix(std::size_t n) const {
  std::string bytes(std::min<uint64_t>(n, size_), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::pread(fd_, bytes.data() + done, bytes.size() - done, off_t(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw LoadError(path_, "file", std::string("read failed: ") + std::strerror(errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

std::string read_input_file(const std::string& path, const std::string& what,
                            uint64_t max_bytes) {
  return InputFile(path, what).read_all(max_bytes);
}

}  // namespace nanoserve
