#pragma once
/// \file
/// \brief `NcclCommunicator`: the `Communicator` on NCCL, the library vLLM, SGLang and
/// TensorRT-LLM use between GPUs (cuda build, when CMake finds NCCL: cmake/FindNCCL.cmake).
///
/// Every collective and transfer is enqueued on a CUDA stream and runs on the GPUs (NVLink,
/// PCIe or the network) without the host: the call returns at once, the stream waits.
/// `synchronize` and `Transfer::wait` wait with the watchdog, and abort the NCCL communicator
/// (`ncclCommAbort`) when a peer does not answer in time, so that no rank hangs.
///
/// Bootstrap: the ranks meet through another communicator (MPI): rank 0 asks NCCL for a unique
/// id, the bootstrap broadcasts it, every rank joins with `ncclCommInitRank`. Control messages
/// go through the bootstrap too. One rank needs no bootstrap at all (tensor parallelism of 1 on
/// one GPU, `scripts/gpu_check.sh`).

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/dist/communicator.h"

namespace nanoserve::dist {

/// \brief A `Communicator` whose data plane is NCCL on the current CUDA device.
///
/// \par Example
/// \snippet tests/ch09/nccl/test_nccl.cpp NcclCommunicator
class NcclCommunicator final : public Communicator {
 public:
  /// \brief Joins the ranks of `bootstrap` (which must outlive this; its rank and size are
  /// this one's) on the current device. Throws `CommError` when NCCL fails.
  explicit NcclCommunicator(Communicator& bootstrap);
  /// \brief A run of one rank, without a bootstrap.
  NcclCommunicator();
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  /// @name Communicator
  /// @{

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
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
  /// \brief Sets this watchdog's time and the bootstrap's (the control plane runs there).
  void set_timeout_s(double seconds) override;
  /// @}

  /// \brief The NCCL handles, defined in the .cpp (no nccl.h for the users of this header).
  struct State;

 private:
  void join(const std::vector<std::uint8_t>& unique_id);

  Communicator* bootstrap_ = nullptr;
  std::unique_ptr<State> state_;
  int rank_ = 0;
  int size_ = 1;
  std::deque<Message> to_self_;  // control messages of a one-rank run
};

}  // namespace nanoserve::dist
