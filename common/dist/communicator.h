#pragma once
/// \file
/// \brief `Communicator`: what the ranks of a distributed run (chapter 9) can do together —
/// collectives and point-to-point transfers of *device* buffers (the data plane) and small
/// tagged messages in host memory (the control plane). Two implementations, both real
/// libraries, no transport of our own:
///
///     MpiCommunicator   Open MPI: ranks are processes started by `mpirun`. In the sim build a
///                       device buffer is host memory and MPI moves it directly; in the cuda
///                       build it is staged through host memory (Debian's Open MPI is not
///                       CUDA-aware). Everywhere, including CI (2 and 4 ranks on one machine).
///     NcclCommunicator  NCCL (cuda build, when found): GPU to GPU over NVLink / PCIe /
///                       InfiniBand, ordered on CUDA streams. It is bootstrapped by MPI (rank 0's
///                       unique id is broadcast) and sends its control messages over MPI.
///
///     rank 0 ─┐        all_reduce (sum)         rank 0: a+b+c+d    (tensor parallelism:
///     rank 1 ─┼──►  a, b, c, d  ──────────►     rank 1: a+b+c+d     one after each
///     rank 2 ─┤                                 ...                 row-parallel linear)
///     rank 3 ─┘    isend(KV blocks) ─────────►  irecv on the peer  (disaggregation: prefill
///                                                                   → decode)
///
/// Every blocking wait has a watchdog (`timeout_s`): a peer that died or hangs makes the call
/// throw `CommError` naming the operation, the peer and the time waited, instead of hanging;
/// a program then calls `abort`, which ends every rank of the run.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cuda_compat.h"

namespace nanoserve::dist {

/// \brief Element type of a collective's buffer.
enum class DataType { kF32, kF16, kBF16, kI32, kI64, kU8 };

/// \brief Bytes of one element of `type`.
inline std::size_t data_type_bytes(DataType type) {
  switch (type) {
    case DataType::kF32: return 4;
    case DataType::kF16: return 2;
    case DataType::kBF16: return 2;
    case DataType::kI32: return 4;
    case DataType::kI64: return 8;
    case DataType::kU8: return 1;
  }
  return 1;
}

/// \brief How `all_reduce` combines the ranks' elements.
enum class ReduceOp { kSum, kMax, kMin };

/// \brief A collective or transfer that failed: a peer died or did not answer within the
/// watchdog's time, or the library reported an error. The message names the backend, the
/// operation and the peer.
class CommError : public Error {
 public:
  /// \brief Wraps a complete message.
  explicit CommError(const std::string& message) : Error(message) {}
};

/// \brief The watchdog's time a communicator starts with: `$NANOSERVE_COMM_TIMEOUT_S` when it
/// is a positive number, else `fallback_s`.
inline double default_comm_timeout_s(double fallback_s = 300) {
  if (const char* env = std::getenv("NANOSERVE_COMM_TIMEOUT_S")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && v > 0) return v;
  }
  return fallback_s;
}

/// \brief A control-plane message: who sent it, its tag, its bytes.
struct Message {
  int source = -1;                  ///< the sender's rank
  int tag = 0;                      ///< the tag it was sent with
  std::vector<std::uint8_t> bytes;  ///< its contents
};

/// \brief A point-to-point transfer in flight (`Communicator::isend` / `irecv`). Its buffer
/// must stay valid and untouched until it completed.
class Transfer {
 public:
  virtual ~Transfer() = default;
  /// \brief Whether it completed (never blocks). Throws `CommError` when it failed.
  virtual bool test() = 0;
  /// \brief Blocks until it completed; throws `CommError` when the watchdog's time passes.
  virtual void wait() = 0;
};

/// \brief The ranks of a run, and what they can do together.
///
/// \par Example
/// \snippet tests/ch09/test_examples_dist.cpp Communicator
class Communicator {
 public:
  /// \brief `poll_message` / `wait_message` from any rank.
  static constexpr int kAnySource = -1;

  virtual ~Communicator() = default;
  /// \brief This process's rank, in [0, size()).
  virtual int rank() const = 0;
  /// \brief Number of ranks.
  virtual int size() const = 0;
  /// \brief "mpi" or "nccl".
  virtual std::string backend() const = 0;
  /// \brief The library and its version, e.g. "Open MPI v4.1.4, 2 ranks".
  virtual std::string description() const = 0;

  // Data plane: device buffers, in the order of `stream`. With MPI each call has completed
  // when it returns; with NCCL it is enqueued on `stream` (`synchronize` waits, with the
  // watchdog).
  /// @name Data plane: device buffers, in the order of a stream
  /// @{

  /// \brief Every rank's `buf` becomes the element-wise `op` of all ranks' `buf` (in place).
  virtual void all_reduce(void* buf, std::size_t count, DataType type, ReduceOp op,
                          cudaStream_t stream) = 0;
  /// \brief `recv` (size() × count) becomes the ranks' `send` (count each), in rank order.
  virtual void all_gather(const void* send, void* recv, std::size_t count, DataType type,
                          cudaStream_t stream) = 0;
  /// \brief Every rank's `buf` becomes `root`'s.
  virtual void broadcast(void* buf, std::size_t count, DataType type, int root,
                         cudaStream_t stream) = 0;
  /// \brief Starts sending `bytes` of device memory at `buf` to `peer` (after the work already
  /// on `stream`). Transfers between two ranks are received in the order they were sent.
  virtual std::unique_ptr<Transfer> isend(const void* buf, std::size_t bytes, int peer,
                                          cudaStream_t stream) = 0;
  /// \brief Starts receiving `bytes` from `peer` into device memory at `buf`.
  virtual std::unique_ptr<Transfer> irecv(void* buf, std::size_t bytes, int peer,
                                          cudaStream_t stream) = 0;
  /// \brief Waits, with the watchdog, for the communication enqueued on `stream`.
  virtual void synchronize(cudaStream_t stream) = 0;
  /// @}

  /// @name Control plane: small messages in host memory
  /// @{

  /// \brief Sends `bytes` to `peer` with `tag` (returns once the bytes are handed over).
  virtual void send_message(int peer, int tag, const std::vector<std::uint8_t>& bytes) = 0;
  /// \brief The next message with `tag` from `source` (or any rank), if one has arrived.
  virtual std::optional<Message> poll_message(int tag, int source = kAnySource) = 0;
  /// \brief Waits for the next message with `tag` from `source` (or any rank); throws
  /// `CommError` when the watchdog's time passes.
  virtual Message wait_message(int tag, int source = kAnySource) = 0;
  /// \brief `root`'s `bytes` on every rank (resized on the others).
  virtual void broadcast_bytes(std::vector<std::uint8_t>& bytes, int root) = 0;
  /// \brief Waits until every rank reached it (with the watchdog).
  virtual void barrier() = 0;
  /// \brief Ends every rank of the run with `code` (after a fatal error on this one).
  [[noreturn]] virtual void abort(int code) = 0;
  /// @}

  /// \brief Seconds a blocking call waits before it throws `CommError`.
  double timeout_s() const { return timeout_s_; }
  /// \brief Sets the watchdog's time (> 0; infinity: no limit). An implementation whose
  /// control plane is another communicator sets that one's too.
  virtual void set_timeout_s(double seconds) {
    if (!(seconds > 0)) throw InvalidArgument("Communicator: timeout_s must be > 0");
    timeout_s_ = seconds;
  }

  /// \brief `isend(...)->wait()`.
  void send(const void* buf, std::size_t bytes, int peer, cudaStream_t stream) {
    isend(buf, bytes, peer, stream)->wait();
  }
  /// \brief `irecv(...)->wait()`.
  void recv(void* buf, std::size_t bytes, int peer, cudaStream_t stream) {
    irecv(buf, bytes, peer, stream)->wait();
  }

 protected:
  /// \brief Throws `InvalidArgument` naming `op` unless `peer` is another rank of the run.
  void check_peer(int peer, const char* op) const {
    if (peer < 0 || peer >= size()) {
      throw InvalidArgument(std::string(op) + ": peer " + std::to_string(peer) +
                            " is not a rank of this run (0.." + std::to_string(size() - 1) + ")");
    }
  }

 private:
  double timeout_s_ = 300;
};

}  // namespace nanoserve::dist
