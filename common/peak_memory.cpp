#include "common/peak_memory.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <fstream>

namespace nanoserve {

namespace {

/// A field of /proc/self/status in bytes ("VmHWM", "VmRSS"), or -1.
std::int64_t status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0) {
      return std::stoll(line.substr(key.size() + 1)) * 1024;
    }
  }
  return -1;
}

/// Resets the peak-RSS mark to the current RSS (Linux: "5" to clear_refs); false if refused.
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

struct Message {
  bool ok;
  std::int64_t peak;
  std::array<std::int64_t, 4> reported;
  char error[512];
};

}  // namespace

PeakMemory measure_peak_memory(const PeakMemoryWork& work) {
  PeakMemory result;
  int fd[2];
  if (pipe(fd) != 0) return result;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return result;
  }
  if (pid == 0) {
    close(fd[0]);
    Message m{};
    if (reset_peak()) {
      const std::int64_t start = status_bytes("VmRSS");
      m.ok = true;
      try {
        m.reported = work();
      } catch (const std::exception& e) {
        std::strncpy(m.error, e.what(), sizeof m.error - 1);
      }
      m.peak = status_bytes("VmHWM") - start;
    }
    const ssize_t n = write(fd[1], &m, sizeof m);
    _exit(n == ssize_t(sizeof m) ? 0 : 1);
  }
  close(fd[1]);
  Message m{};
  const ssize_t n = read(fd[0], &m, sizeof m);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n != ssize_t(sizeof m) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return result;
  result.ok = m.ok;
  result.peak_bytes = m.peak;
  result.reported = m.reported;
  result.error = m.error;
  return result;
}

}  // namespace nanoserve
