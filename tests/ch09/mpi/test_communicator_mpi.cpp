// The MPI communicator under `mpirun -np 2` and `-np 4` (ctest starts mpirun): every collective,
// transfers and control messages, checked on every rank against values each rank can compute.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "kernels/device_buffer.h"
#include "tests/ch09/mpi/mpi_test_support.h"

namespace nanoserve::dist {
namespace {

using testing::world;

TEST(Ch09MpiCommunicator, AllReduceSumsMaxesAndMinsEveryRanksElements) {
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank();
  const std::size_t count = 1037;  // not a multiple of anything MPI might chunk by
  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = float((r + 1) * int(i % 97) - 3 * r);
  DeviceBuffer<float> buf(host);
  comm.all_reduce(buf.get(), count, DataType::kF32, ReduceOp::kSum, nullptr);
  const std::vector<float> sum = buf.to_host();
  for (std::size_t i = 0; i < count; ++i) {
    // Σ_r (r+1)·k - 3r = k·n(n+1)/2 - 3·n(n-1)/2: small integers, exact in fp32.
    const float want = float(int(i % 97) * n * (n + 1) / 2 - 3 * n * (n - 1) / 2);
    ASSERT_EQ(sum[i], want) << "element " << i;
  }
  std::vector<std::int64_t> ids{r, -r, 1000000000000LL * r};
  DeviceBuffer<std::int64_t> ibuf(ids);
  comm.all_reduce(ibuf.get(), 3, DataType::kI64, ReduceOp::kMax, nullptr);
  EXPECT_EQ(ibuf.to_host(), (std::vector<std::int64_t>{n - 1, 0, 1000000000000LL * (n - 1)}));
  DeviceBuffer<std::int64_t> jbuf(ids);
  comm.all_reduce(jbuf.get(), 3, DataType::kI64, ReduceOp::kMin, nullptr);
  EXPECT_EQ(jbuf.to_host(), (std::vector<std::int64_t>{0, -(n - 1), 0}));
}

TEST(Ch09MpiCommunicator, HalfAndBfloat16SumsWidenToFp32AndRoundOnce) {
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank();
  // 0.25 + r/8: sums of n such values are exact in fp16 and bf16 (few significant bits).
  std::vector<__half> h(5, __float2half(0.25f + 0.125f * float(r)));
  std::vector<__nv_bfloat16> b(5, __float2bfloat16(-1.5f - float(r)));
  DeviceBuffer<__half> hb(h);
  DeviceBuffer<__nv_bfloat16> bb(b);
  comm.all_reduce(hb.get(), 5, DataType::kF16, ReduceOp::kSum, nullptr);
  comm.all_reduce(bb.get(), 5, DataType::kBF16, ReduceOp::kSum, nullptr);
  const float hwant = 0.25f * float(n) + 0.125f * float(n * (n - 1) / 2);
  const float bwant = -1.5f * float(n) - float(n * (n - 1) / 2);
  for (const __half& x : hb.to_host()) EXPECT_EQ(__half2float(x), hwant);
  for (const __nv_bfloat16& x : bb.to_host()) EXPECT_EQ(__bfloat162float(x), bwant);
}

TEST(Ch09MpiCommunicator, AllGatherConcatenatesInRankOrder) {
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank();
  const std::size_t count = 3;
  DeviceBuffer<std::int32_t> send(std::vector<std::int32_t>{10 * r, 10 * r + 1, 10 * r + 2});
  DeviceBuffer<std::int32_t> recv(count * static_cast<std::size_t>(n));
  comm.all_gather(send.get(), recv.get(), count, DataType::kI32, nullptr);
  std::vector<std::int32_t> want;
  for (int k = 0; k < n; ++k) want.insert(want.end(), {10 * k, 10 * k + 1, 10 * k + 2});
  EXPECT_EQ(recv.to_host(), want);
}

TEST(Ch09MpiCommunicator, BroadcastCopiesTheRootsBufferFromEveryRoot) {
  Communicator& comm = world();
  for (int root = 0; root < comm.size(); ++root) {
    DeviceBuffer<float> buf(std::vector<float>(17, float(comm.rank() * 100 + 7)));
    comm.broadcast(buf.get(), 17, DataType::kF32, root, nullptr);
    EXPECT_EQ(buf.to_host(), std::vector<float>(17, float(root * 100 + 7))) << "root " << root;
  }
}

TEST(Ch09MpiCommunicator, TransfersAroundARingArriveWholeAndInOrder) {
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  // Two transfers to the same peer, one large (MPI's rendezvous protocol) and one of one byte:
  // they must arrive in the order they were sent.
  const std::size_t big = 1000003;
  std::vector<std::uint8_t> a(big), b{static_cast<std::uint8_t>(r)};
  for (std::size_t i = 0; i < big; ++i) a[i] = static_cast<std::uint8_t>((i * 31 + r) & 0xff);
  DeviceBuffer<std::uint8_t> sa(a), sb(b), ra(big), rb(1);
  auto recv_a = comm.irecv(ra.get(), big, prev, nullptr);
  auto recv_b = comm.irecv(rb.get(), 1, prev, nullptr);
  auto send_a = comm.isend(sa.get(), big, next, nullptr);
  auto send_b = comm.isend(sb.get(), 1, next, nullptr);
  send_a->wait();
  send_b->wait();
  recv_a->wait();
  recv_b->wait();
  EXPECT_TRUE(recv_a->test());
  const std::vector<std::uint8_t> got = ra.to_host();
  for (std::size_t i = 0; i < big; ++i) {
    ASSERT_EQ(got[i], static_cast<std::uint8_t>((i * 31 + prev) & 0xff)) << "byte " << i;
  }
  EXPECT_EQ(rb.to_host(), std::vector<std::uint8_t>{static_cast<std::uint8_t>(prev)});
}

TEST(Ch09MpiCommunicator, ControlMessagesArriveByTagAndBroadcastBytesResizes) {
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank();
  // Rank 0 hears from everyone else; the others get a reply.
  if (r == 0) {
    std::vector<int> seen(n, 0);
    for (int k = 1; k < n; ++k) {
      Message m = comm.wait_message(7);
      ASSERT_EQ(m.tag, 7);
      ASSERT_EQ(m.bytes, (std::vector<std::uint8_t>{static_cast<std::uint8_t>(m.source), 42}));
      ++seen[m.source];
      comm.send_message(m.source, 8, {1, 2, 3});
    }
    for (int k = 1; k < n; ++k) EXPECT_EQ(seen[k], 1) << "rank " << k;
    EXPECT_FALSE(comm.poll_message(7).has_value());
  } else {
    comm.send_message(0, 7, {static_cast<std::uint8_t>(r), 42});
    EXPECT_EQ(comm.wait_message(8, 0).bytes, (std::vector<std::uint8_t>{1, 2, 3}));
  }
  std::vector<std::uint8_t> bytes;
  if (r == n - 1) bytes = {9, 8, 7, 6};
  comm.broadcast_bytes(bytes, n - 1);
  EXPECT_EQ(bytes, (std::vector<std::uint8_t>{9, 8, 7, 6}));
  comm.barrier();
}

TEST(Ch09MpiCommunicator, WaitingForAMessageNobodySendsThrowsAfterTheWatchdogsTime) {
  Communicator& comm = world();
  const double saved = comm.timeout_s();
  comm.set_timeout_s(0.2);
  try {
    comm.wait_message(99);
    ADD_FAILURE() << "no CommError";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing within 0.2"), std::string::npos) << e.what();
  }
  comm.set_timeout_s(saved);
  EXPECT_THROW(comm.isend(nullptr, 0, comm.size(), nullptr), InvalidArgument);
  EXPECT_THROW(comm.set_timeout_s(0), InvalidArgument);
  comm.barrier();
}

}  // namespace
}  // namespace nanoserve::dist
