#pragma once
/// \file
/// \brief `MpiCommunicator`: the `Communicator` on Open MPI — every rank a process started by
/// `mpirun -np N`, the collectives and transfers MPI's own (non-blocking calls, completed under
/// the watchdog: `MPI_Iallreduce`, `MPI_Isend`, `MPI_Ibarrier` … polled with `MPI_Test` until
/// done or `timeout_s`). Errors are returned, not fatal (`MPI_ERRORS_RETURN`), and become
/// `CommError`.
///
/// Device buffers: in the sim build they are host memory and MPI reads and writes them in
/// place; in the cuda build each call waits for its stream and goes through a host copy (the
/// Debian build of Open MPI is not CUDA-aware) — correct everywhere, fast nowhere: on GPUs use
/// `NcclCommunicator`.
///
/// fp16 and bf16 all-reduces use reduction operators of our own (MPI has no 16-bit floats):
/// each pair of elements is widened to fp32, combined and rounded back — the same rounding as
/// NCCL's fp16/bf16 sum of two ranks.

#include <memory>
#include <string>
#include <vector>

#include "common/dist/communicator.h"

namespace nanoserve::dist {

/// \brief The `Communicator` of every rank of `MPI_COMM_WORLD`.
///
/// \par Example
/// \snippet tests/ch09/test_examples_dist.cpp Communicator
class MpiCommunicator final : public Communicator {
 public:
  /// \brief Initializes MPI if nobody did (it is finalized when the process exits, so that
  /// communicators may come and go) and duplicates `MPI_COMM_WORLD`. A program not started by `mpirun` runs as one
  /// rank (MPI's singleton mode). The watchdog's time is `$NANOSERVE_COMM_TIMEOUT_S` when set,
  /// else 300 s. Throws `CommError` when MPI cannot start.
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  /// @name Communicator
  /// @{

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  std::string description() const override;
  void all_reduce(void* buf, std::size_t count, DataType type, ReduceOp op,
                  cudaStream_t stream) override;
  void all_gather(const void* send, void* recv, std::size_t count, DataType type,
                  cudaStream_t stream) override;
  void broadcast(void* buf, std::size_t count, DataType type, int root,
                 cudaStream_t stream) override;
  std::unique_ptr<Transfer> isend(const void* buf, std::size_t bytes, int peer,
                                  cudaStream_t stream) override;
  std::unique_ptr<Transfer> irecv(void* buf, std::size_t bytes, int peer,
                                  cudaStream_t stream) override;
  void synchronize(cudaStream_t stream) override;
  void send_message(int peer, int tag, const std::vector<std::uint8_t>& bytes) override;
  std::optional<Message> poll_message(int tag, int source = kAnySource) override;
  Message wait_message(int tag, int source = kAnySource) override;
  void broadcast_bytes(std::vector<std::uint8_t>& bytes, int root) override;
  void barrier() override;
  [[noreturn]] void abort(int code) override;
  /// @}

  /// \brief The tag of `isend`/`irecv` payloads; control messages use tags below it.
  static constexpr int kDataTag = 30000;

  /// \brief The MPI handles, defined in the .cpp (no mpi.h for the users of this header).
  struct State;

 private:
  std::unique_ptr<State> state_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace nanoserve::dist
