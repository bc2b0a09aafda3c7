#include "common/dist/mpi_communicator.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace nanoserve::dist {

namespace {

// MPI cannot be initialized twice in a process: it is finalized at exit, not when a
// communicator goes, if we initialized it.
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(len));
}

void check(int rc, const std::string& what) {
  if (rc != MPI_SUCCESS) throw CommError("MPI " + what + " failed: " + mpi_error_text(rc));
}

// ─── fp16 / bf16 reductions: widen to fp32, combine, round back ─────────────────────────────

template <typename H, ReduceOp Op>
void reduce_16(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]);
    const float y = static_cast<float>(b[i]);
    const float r = Op == ReduceOp::kSum ? x + y : Op == ReduceOp::kMax ? (x > y ? x : y)
                                                                        : (x < y ? x : y);
    b[i] = H(r);
  }
}

MPI_Datatype mpi_type(DataType type, MPI_Datatype half_type) {
  switch (type) {
    case DataType::kF32: return MPI_FLOAT;
    case DataType::kF16:
    case DataType::kBF16: return half_type;
    case DataType::kI32: return MPI_INT32_T;
    case DataType::kI64: return MPI_INT64_T;
    case DataType::kU8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

int op_index(ReduceOp op) { return op == ReduceOp::kSum ? 0 : op == ReduceOp::kMax ? 1 : 2; }

// A device buffer as MPI sees it: itself in the simulator (host memory), a host copy on a GPU.
class HostView {
 public:
  HostView(void* device, std::size_t bytes, cudaStream_t stream, bool read)
      : device_(device), bytes_(bytes) {
#if NANOSERVE_REAL_CUDA
    CUDA_CHECK(cudaStreamSynchronize(stream));
    host_.resize(bytes);
    if (read && bytes > 0) {
      CUDA_CHECK(cudaMemcpy(host_.data(), device, bytes, cudaMemcpyDeviceToHost));
    }
#else
    (void)stream;
    (void)read;
#endif
  }
  void* data() {
#if NANOSERVE_REAL_CUDA
    return host_.data();
#else
    return device_;
#endif
  }
  // Copies the host copy back to the device (a no-op in the simulator).
  void write_back() {
#if NANOSERVE_REAL_CUDA
    if (bytes_ > 0) CUDA_CHECK(cudaMemcpy(device_, host_.data(), bytes_, cudaMemcpyHostToDevice));
#endif
  }

 private:
  void* device_;
  std::size_t bytes_;
#if NANOSERVE_REAL_CUDA
  std::vector<unsigned char> host_;
#endif
};

}  // namespace

struct MpiCommunicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Datatype half_type = MPI_DATATYPE_NULL;  // two bytes, combined by the ops below
  MPI_Op f16_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};   // sum, max, min
  MPI_Op bf16_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  double timeout_s = 300;

  // Polls `req` until it completes; throws CommError naming `what` after timeout_s.
  void wait(MPI_Request& req, const std::string& what) const {
    const auto start = std::chrono::steady_clock::now();
    int spins = 0;
    while (true) {
      int done = 0;
      MPI_Status status;
      check(MPI_Test(&req, &done, &status), what);
      if (done) return;
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > timeout_s) {
        throw CommError("MPI " + what + ": no answer within " + std::to_string(timeout_s) +
                        " s (a rank died or hangs; watchdog NANOSERVE_COMM_TIMEOUT_S)");
      }
      // Spin briefly, then sleep: ranks may share fewer cores than there are ranks.
      if (++spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(spins > 1024 ? 500 : 20));
    }
  }
};

namespace {

class MpiTransfer final : public Transfer {
 public:
  MpiTransfer(const MpiCommunicator::State* state, std::string what)
      : state_(state), what_(std::move(what)) {}
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<unsigned char> host;  // the host copy of a cuda-build transfer
  void* device_dst = nullptr;       // a cuda-build receive: where the host copy goes
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Test(&request, &flag, MPI_STATUS_IGNORE), what_);
    if (flag) finish();
    return done_;
  }
  void wait() override {
    if (done_) return;
    state_->wait(request, what_);
    finish();
  }
  ~MpiTransfer() override {
    // A transfer dropped unfinished: cancel it so its buffer is not written later.
    if (!done_ && request != MPI_REQUEST_NULL) {
      MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
  }

 private:
  void finish() {
    done_ = true;
    if (device_dst != nullptr && !host.empty()) {
      CUDA_CHECK(cudaMemcpy(device_dst, host.data(), host.size(), cudaMemcpyHostToDevice));
    }
  }
  const MpiCommunicator::State* state_;
  std::string what_;
  bool done_ = false;
};

}  // namespace

MpiCommunicator::MpiCommunicator() : state_(std::make_unique<State>()) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = 0;
    // Serialized: a server's engine thread (not the main one) runs the passes, one thread at
    // a time.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &state_->comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(state_->comm, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(state_->comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(state_->comm, &size_), "MPI_Comm_size");
  check(MPI_Type_contiguous(2, MPI_BYTE, &state_->half_type), "MPI_Type_contiguous");
  check(MPI_Type_commit(&state_->half_type), "MPI_Type_commit");
  MPI_User_function* f16[3] = {&reduce_16<__half, ReduceOp::kSum>,
                               &reduce_16<__half, ReduceOp::kMax>,
                               &reduce_16<__half, ReduceOp::kMin>};
  MPI_User_function* bf16[3] = {&reduce_16<__nv_bfloat16, ReduceOp::kSum>,
                                &reduce_16<__nv_bfloat16, ReduceOp::kMax>,
                                &reduce_16<__nv_bfloat16, ReduceOp::kMin>};
  for (int i = 0; i < 3; ++i) {
    check(MPI_Op_create(f16[i], 1, &state_->f16_ops[i]), "MPI_Op_create");
    check(MPI_Op_create(bf16[i], 1, &state_->bf16_ops[i]), "MPI_Op_create");
  }
  state_->timeout_s = default_comm_timeout_s();
  set_timeout_s(state_->timeout_s);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (int i = 0; i < 3; ++i) {
      MPI_Op_free(&state_->f16_ops[i]);
      MPI_Op_free(&state_->bf16_ops[i]);
    }
    MPI_Type_free(&state_->half_type);
    MPI_Comm_free(&state_->comm);
  }
}

std::string MpiCommunicator::description() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string text(version, static_cast<std::size_t>(len));
  text = text.substr(0, text.find_first_of(",\n"));
  return text + ", " + std::to_string(size_) + (size_ == 1 ? " rank" : " ranks");
}

void MpiCommunicator::all_reduce(void* buf, std::size_t count, DataType type, ReduceOp op,
                                 cudaStream_t stream) {
  state_->timeout_s = timeout_s();
  const MPI_Datatype t = mpi_type(type, state_->half_type);
  MPI_Op mop = op == ReduceOp::kSum ? MPI_SUM : op == ReduceOp::kMax ? MPI_MAX : MPI_MIN;
  if (type == DataType::kF16) mop = state_->f16_ops[op_index(op)];
  if (type == DataType::kBF16) mop = state_->bf16_ops[op_index(op)];
  HostView view(buf, count * data_type_bytes(type), stream, true);
  MPI_Request req;
  check(MPI_Iallreduce(MPI_IN_PLACE, view.data(), static_cast<int>(count), t, mop, state_->comm,
                       &req), "all_reduce");
  state_->wait(req, "all_reduce of " + std::to_string(count) + " elements");
  view.write_back();
}

void MpiCommunicator::all_gather(const void* send, void* recv, std::size_t count, DataType type,
                                 cudaStream_t stream) {
  state_->timeout_s = timeout_s();
  const std::size_t bytes = count * data_type_bytes(type);
  HostView in(const_cast<void*>(send), bytes, stream, true);
  HostView out(recv, bytes * static_cast<std::size_t>(size_), stream, false);
  MPI_Request req;
  const MPI_Datatype t = mpi_type(type, state_->half_type);
  check(MPI_Iallgather(in.data(), static_cast<int>(count), t, out.data(), static_cast<int>(count),
                       t, state_->comm, &req), "all_gather");
  state_->wait(req, "all_gather of " + std::to_string(count) + " elements per rank");
  out.write_back();
}

void MpiCommunicator::broadcast(void* buf, std::size_t count, DataType type, int root,
                                cudaStream_t stream) {
  check_peer(root, "broadcast");
  state_->timeout_s = timeout_s();
  HostView view(buf, count * data_type_bytes(type), stream, rank_ == root);
  MPI_Request req;
  check(MPI_Ibcast(view.data(), static_cast<int>(count), mpi_type(type, state_->half_type), root,
                   state_->comm, &req), "broadcast");
  state_->wait(req, "broadcast from rank " + std::to_string(root));
  if (rank_ != root) view.write_back();
}

std::unique_ptr<Transfer> MpiCommunicator::isend(const void* buf, std::size_t bytes, int peer,
                                                 cudaStream_t stream) {
  check_peer(peer, "isend");
  state_->timeout_s = timeout_s();
  auto t = std::make_unique<MpiTransfer>(state_.get(), "send of " + std::to_string(bytes) +
                                                           " bytes to rank " + std::to_string(peer));
  const void* src = buf;
#if NANOSERVE_REAL_CUDA
  CUDA_CHECK(cudaStreamSynchronize(stream));
  t->host.resize(bytes);
  if (bytes > 0) CUDA_CHECK(cudaMemcpy(t->host.data(), buf, bytes, cudaMemcpyDeviceToHost));
  src = t->host.data();
#else
  (void)stream;
#endif
  check(MPI_Isend(src, static_cast<int>(bytes), MPI_BYTE, peer, kDataTag, state_->comm,
                  &t->request), "isend");
  return t;
}

std::unique_ptr<Transfer> MpiCommunicator::irecv(void* buf, std::size_t bytes, int peer,
                                                 cudaStream_t stream) {
  check_peer(peer, "irecv");
  state_->timeout_s = timeout_s();
  auto t = std::make_unique<MpiTransfer>(state_.get(), "receive of " + std::to_string(bytes) +
                                                           " bytes from rank " +
                                                           std::to_string(peer));
  void* dst = buf;
#if NANOSERVE_REAL_CUDA
  CUDA_CHECK(cudaStreamSynchronize(stream));
  t->host.resize(bytes);
  t->device_dst = buf;
  dst = t->host.data();
#else
  (void)stream;
#endif
  check(MPI_Irecv(dst, static_cast<int>(bytes), MPI_BYTE, peer, kDataTag, state_->comm,
                  &t->request), "irecv");
  return t;
}

void MpiCommunicator::synchronize(cudaStream_t stream) { CUDA_CHECK(cudaStreamSynchronize(stream)); }

void MpiCommunicator::send_message(int peer, int tag, const std::vector<std::uint8_t>& bytes) {
  check_peer(peer, "send_message");
  state_->timeout_s = timeout_s();
  MPI_Request req;
  check(MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, peer, tag,
                  state_->comm, &req), "send_message");
  state_->wait(req, "message (tag " + std::to_string(tag) + ") to rank " + std::to_string(peer));
}

std::optional<Message> MpiCommunicator::poll_message(int tag, int source) {
  int flag = 0;
  MPI_Status status;
  const int src = source == kAnySource ? MPI_ANY_SOURCE : source;
  check(MPI_Iprobe(src, tag, state_->comm, &flag, &status), "poll_message");
  if (!flag) return std::nullopt;
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "poll_message");
  Message m;
  m.source = status.MPI_SOURCE;
  m.tag = tag;
  m.bytes.resize(static_cast<std::size_t>(count));
  check(MPI_Recv(m.bytes.data(), count, MPI_BYTE, m.source, tag, state_->comm,
                 MPI_STATUS_IGNORE), "poll_message");
  return m;
}

Message MpiCommunicator::wait_message(int tag, int source) {
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0;; ++spins) {
    if (std::optional<Message> m = poll_message(tag, source)) return std::move(*m);
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s()) {
      throw CommError("MPI wait_message (tag " + std::to_string(tag) + ") from " +
                      (source == kAnySource ? std::string("any rank")
                                            : "rank " + std::to_string(source)) +
                      ": nothing within " + std::to_string(timeout_s()) +
                      " s (a rank died or hangs; watchdog NANOSERVE_COMM_TIMEOUT_S)");
    }
    if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(spins > 1024 ? 500 : 20));
  }
}

void MpiCommunicator::broadcast_bytes(std::vector<std::uint8_t>& bytes, int root) {
  check_peer(root, "broadcast_bytes");
  state_->timeout_s = timeout_s();
  std::uint64_t n = bytes.size();
  MPI_Request req;
  check(MPI_Ibcast(&n, 1, MPI_UINT64_T, root, state_->comm, &req), "broadcast_bytes");
  state_->wait(req, "broadcast_bytes from rank " + std::to_string(root));
  bytes.resize(static_cast<std::size_t>(n));
  check(MPI_Ibcast(bytes.data(), static_cast<int>(n), MPI_BYTE, root, state_->comm, &req),
        "broadcast_bytes");
  state_->wait(req, "broadcast_bytes from rank " + std::to_string(root));
}

void MpiCommunicator::barrier() {
  state_->timeout_s = timeout_s();
  MPI_Request req;
  check(MPI_Ibarrier(state_->comm, &req), "barrier");
  state_->wait(req, "barrier");
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; if it did, end this rank at least
}

}  // namespace nanoserve::dist
