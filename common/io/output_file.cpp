#include "common/io/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace nanoserve {
namespace {

[[noreturn]] void fail(const std::string& path, int err) {
  throw Error(path + ": cannot write: " + std::strerror(err));
}

int open_for_writing(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, errno);
  return fd;
}

}  // namespace

void write_output_file(const std::string& path, std::string_view bytes) {
  const int fd = open_for_writing(path);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      fail(path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) fail(path, errno);
}

void check_output_path(const std::string& path) {
  const int fd = open_for_writing(path);
  if (::close(fd) != 0) fail(path, errno);
}

void flush_stdout() {
  if (std::fflush(stdout) != 0) {
    throw Error(std::string("stdout: write failed: ") + std::strerror(errno));
  }
}

void finish_stdout() {
  errno = 0;
  const bool earlier_error = std::ferror(stdout) != 0;
  const int saved = errno;
  if (std::fflush(stdout) != 0 || earlier_error) {
    const int err = errno != 0 ? errno : saved;
    throw Error(std::string("stdout: write failed: ") + (err != 0 ? std::strerror(err) : "I/O error"));
  }
  // close() reports errors that only the last flush to the file system reveals (NFS, quotas).
  // EBADF: stdout was closed by the caller and nothing was written to it (that would have
  // set the error flag above).
  if (std::fclose(stdout) != 0 && errno != EBADF) {
    throw Error(std::string("stdout: write failed: ") + std::strerror(errno));
  }
}

}  // namespace nanoserve
