#include "common/dist/nccl_communicator.h"

#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>


namespace nanoserve::dist {

namespace {

void check(ncclResult_t rc, const std::string& what) {
  if (rc != ncclSuccess) {
    throw CommError("NCCL " + what + " failed: " + ncclGetErrorString(rc) + " (" +
                    ncclGetLastError(nullptr) + ")");
  }
}

ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::kF32: return ncclFloat32;
    case DataType::kF16: return ncclFloat16;
    case DataType::kBF16: return ncclBfloat16;
    case DataType::kI32: return ncclInt32;
    case DataType::kI64: return ncclInt64;
    case DataType::kU8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::kSum ? ncclSum : op == ReduceOp::kMax ? ncclMax : ncclMin;
}

}  // namespace

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  bool aborted = false;

  // Polls `ready` (true when the GPU work is done) until it is; throws CommError naming `what`
  // after `timeout_s`, or as soon as NCCL reports an asynchronous error, aborting the
  // communicator first so that its kernels stop waiting for a dead peer.
  template <typename Ready>
  void wait(Ready ready, const std::string& what, double timeout_s) {
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      if (ready()) return;
      ncclResult_t async = ncclSuccess;
      check(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (async != ncclSuccess || waited > timeout_s) {
        ncclCommAbort(comm);
        aborted = true;
        throw CommError("NCCL " + what + ": " +
                        (async != ncclSuccess
                             ? std::string(ncclGetErrorString(async))
                             : "no answer within " + std::to_string(timeout_s) + " s") +
                        " (a rank died or hangs; the communicator was aborted)");
      }
      if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
};

namespace {

class NcclTransfer final : public Transfer {
 public:
  NcclTransfer(NcclCommunicator::State* state, std::string what, double timeout_s,
               cudaStream_t stream)
      : state_(state), what_(std::move(what)), timeout_s_(timeout_s) {
    CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done_, stream));
  }
  ~NcclTransfer() override { cudaEventDestroy(done_); }
  bool test() override {
    const cudaError_t rc = cudaEventQuery(done_);
    if (rc == cudaErrorNotReady) return false;
    CUDA_CHECK(rc);
    return true;
  }
  void wait() override {
    state_->wait([this] { return test(); }, what_, timeout_s_);
  }

 private:
  NcclCommunicator::State* state_;
  std::string what_;
  double timeout_s_;
  cudaEvent_t done_ = nullptr;
};

}  // namespace

NcclCommunicator::NcclCommunicator(Communicator& bootstrap)
    : bootstrap_(&bootstrap), state_(std::make_unique<State>()),
      rank_(bootstrap.rank()), size_(bootstrap.size()) {
  set_timeout_s(bootstrap.timeout_s());
  std::vector<std::uint8_t> id(sizeof(ncclUniqueId));
  if (rank_ == 0) {
    ncclUniqueId uid;
    check(ncclGetUniqueId(&uid), "ncclGetUniqueId");
    std::memcpy(id.data(), &uid, sizeof uid);
  }
  bootstrap.broadcast_bytes(id, 0);
  join(id);
}

NcclCommunicator::NcclCommunicator() : state_(std::make_unique<State>()) {
  set_timeout_s(default_comm_timeout_s());
  std::vector<std::uint8_t> id(sizeof(ncclUniqueId));
  ncclUniqueId uid;
  check(ncclGetUniqueId(&uid), "ncclGetUniqueId");
  std::memcpy(id.data(), &uid, sizeof uid);
  join(id);
}

void NcclCommunicator::join(const std::vector<std::uint8_t>& unique_id) {
  if (unique_id.size() != sizeof(ncclUniqueId)) {
    throw CommError("NCCL bootstrap: the unique id has " + std::to_string(unique_id.size()) +
                    " bytes, not " + std::to_string(sizeof(ncclUniqueId)));
  }
  ncclUniqueId uid;
  std::memcpy(&uid, unique_id.data(), sizeof uid);
  check(ncclCommInitRank(&state_->comm, size_, uid, rank_), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() {
  if (state_->comm != nullptr && !state_->aborted) ncclCommDestroy(state_->comm);
}

std::string NcclCommunicator::description() const {
  int version = 0;
  ncclGetVersion(&version);
  const int major = version / 10000, minor = (version / 100) % 100, patch = version % 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch) + ", " + std::to_string(size_) + (size_ == 1 ? " rank" : " ranks");
}

void NcclCommunicator::all_reduce(void* buf, std::size_t count, DataType type, ReduceOp op,
                                  cudaStream_t stream) {
  check(ncclAllReduce(buf, buf, count, nccl_type(type), nccl_op(op), state_->comm, stream),
        "all_reduce");
}

void NcclCommunicator::all_gather(const void* send, void* recv, std::size_t count, DataType type,
                                  cudaStream_t stream) {
  check(ncclAllGather(send, recv, count, nccl_type(type), state_->comm, stream), "all_gather");
}

void NcclCommunicator::broadcast(void* buf, std::size_t count, DataType type, int root,
                                 cudaStream_t stream) {
  check_peer(root, "broadcast");
  check(ncclBroadcast(buf, buf, count, nccl_type(type), root, state_->comm, stream), "broadcast");
}

std::unique_ptr<Transfer> NcclCommunicator::isend(const void* buf, std::size_t bytes, int peer,
                                                  cudaStream_t stream) {
  check_peer(peer, "isend");
  check(ncclSend(buf, bytes, ncclUint8, peer, state_->comm, stream), "send");
  return std::make_unique<NcclTransfer>(state_.get(), "send of " + std::to_string(bytes) +
                                        " bytes to rank " + std::to_string(peer), timeout_s(),
                                        stream);
}

std::unique_ptr<Transfer> NcclCommunicator::irecv(void* buf, std::size_t bytes, int peer,
                                                  cudaStream_t stream) {
  check_peer(peer, "irecv");
  check(ncclRecv(buf, bytes, ncclUint8, peer, state_->comm, stream), "recv");
  return std::make_unique<NcclTransfer>(state_.get(), "receive of " + std::to_string(bytes) +
                                        " bytes from rank " + std::to_string(peer), timeout_s(),
                                        stream);
}

void NcclCommunicator::synchronize(cudaStream_t stream) {
  state_->wait(
      [stream] {
        const cudaError_t rc = cudaStreamQuery(stream);
        if (rc == cudaErrorNotReady) return false;
        CUDA_CHECK(rc);
        return true;
      },
      "synchronize", timeout_s());
}

void NcclCommunicator::send_message(int peer, int tag, const std::vector<std::uint8_t>& bytes) {
  if (bootstrap_ != nullptr) return bootstrap_->send_message(peer, tag, bytes);
  check_peer(peer, "send_message");
  to_self_.push_back(Message{0, tag, bytes});
}

std::optional<Message> NcclCommunicator::poll_message(int tag, int source) {
  if (bootstrap_ != nullptr) return bootstrap_->poll_message(tag, source);
  for (auto it = to_self_.begin(); it != to_self_.end(); ++it) {
    if (it->tag == tag) {
      Message m = std::move(*it);
      to_self_.erase(it);
      return m;
    }
  }
  return std::nullopt;
}

Message NcclCommunicator::wait_message(int tag, int source) {
  if (bootstrap_ != nullptr) return bootstrap_->wait_message(tag, source);
  if (std::optional<Message> m = poll_message(tag, source)) return std::move(*m);
  throw CommError("NCCL wait_message (tag " + std::to_string(tag) +
                  "): a one-rank run has no message to wait for");
}

void NcclCommunicator::broadcast_bytes(std::vector<std::uint8_t>& bytes, int root) {
  if (bootstrap_ != nullptr) return bootstrap_->broadcast_bytes(bytes, root);
  check_peer(root, "broadcast_bytes");
}

void NcclCommunicator::barrier() {
  if (bootstrap_ != nullptr) bootstrap_->barrier();
}

void NcclCommunicator::set_timeout_s(double seconds) {
  Communicator::set_timeout_s(seconds);
  if (bootstrap_ != nullptr) bootstrap_->set_timeout_s(seconds);
}

void NcclCommunicator::abort(int code) {
  if (state_->comm != nullptr && !state_->aborted) ncclCommAbort(state_->comm);
  state_->aborted = true;
  if (bootstrap_ != nullptr) bootstrap_->abort(code);
  std::_Exit(code);
}

}  // namespace nanoserve::dist
