#include "common/roofline/link.h"

#include "common/error.h"

namespace nanoserve::roofline {

const std::vector<Link>& links() {
  // Latencies are assumptions (none is measured here): a few µs for an NCCL send or an
  // all-reduce step inside one box, more through a NIC and a switch.
  static const std::vector<Link> table = {
      {"nvlink4", "NVLink 4", "NVLink 4 (H100/H200 SXM), 18 links, 900 GB/s both directions",
       450e9, 5e-6,
       "NVIDIA H100 Tensor Core GPU datasheet / NVIDIA H200 datasheet: NVLink 900 GB/s "
       "(bidirectional, 18 links of 50 GB/s)"},
      {"pcie5", "PCIe 5 x16", "PCI Express 5.0 x16, 32 GT/s per lane, 128b/130b", 63e9, 10e-6,
       "PCI-SIG, PCI Express Base Specification 5.0 (32 GT/s per lane): ~63 GB/s per direction "
       "for x16; NVIDIA H100 PCIe datasheet: 128 GB/s (both directions)"},
      {"ib400", "IB NDR 400G", "InfiniBand NDR, 400 Gb/s per port (one NIC per GPU)", 50e9, 20e-6,
       "NVIDIA ConnectX-7 datasheet / InfiniBand NDR: 400 Gb/s per port = 50 GB/s per direction"},
  };
  return table;
}

std::string link_keys() {
  std::string keys;
  for (const Link& l : links()) keys += std::string(keys.empty() ? "" : ", ") + l.key;
  return keys;
}

const Link& find_link(const std::string& key) {
  for (const Link& l : links()) {
    if (key == l.key) return l;
  }
  throw InvalidArgument("unknown link '" + key + "' (known: " + link_keys() + ")");
}

double transfer_s(const Link& link, double bytes, double link_fraction) {
  if (bytes <= 0) return 0;
  return link.latency_s + bytes / (link.bandwidth * link_fraction);
}

double all_reduce_s(const Link& link, double bytes, int ranks, double link_fraction) {
  if (ranks <= 1 || bytes <= 0) return 0;
  // BEGIN EXERCISE ch09.2 "The cost of a ring all-reduce" points=10 minutes=15
  // HINT: NCCL's ring is a reduce-scatter then an all-gather, n − 1 steps each; in every step each
  // HINT: rank sends bytes / n to its neighbour over the link (at bandwidth · link_fraction) and
  // HINT: pays the link's latency once.
  // STUB: (void)link;
  // STUB: (void)link_fraction;
  // STUB: return 0;
  const double steps = 2.0 * (ranks - 1);
  return steps * link.latency_s + steps / ranks * bytes / (link.bandwidth * link_fraction);
  // END EXERCISE
}

}  // namespace nanoserve::roofline
