#pragma once
/// \file
/// \brief The links between GPUs the roofline model knows — what moving bytes from one GPU to
/// another costs (chapter 9: the KV of a prompt from a prefill to a decode instance, the
/// all-reduce of tensor parallelism). Each link's bandwidth is the vendor's or the standard's
/// peak, *per direction*; `source` names the document. As for devices (`device.h`), a modeled
/// transfer reaches a fraction of the peak and pays a fixed latency:
///
///     transfer(bytes) = latency + bytes / (bandwidth · f_link)
///     ring all-reduce over n ranks (NCCL's algorithm for large messages; Patarasuk & Yuan 2009):
///       2(n−1) steps, each moving bytes/n per rank:  2(n−1)·latency + 2(n−1)/n · bytes / (bw · f)

#include <string>
#include <vector>

namespace nanoserve::roofline {

/// \brief Fraction of a link's peak a large transfer reaches: NCCL's bus bandwidth on NVLink
/// and InfiniBand is commonly 80–90% of the line rate; 0.8 is the low end.
constexpr double kAchievableLinkFraction = 0.8;

/// \brief One link of the table.
struct Link {
  const char* key;      ///< the name `--link` takes, e.g. "nvlink4"
  const char* label;    ///< short name for tables, e.g. "NVLink 4"
  const char* name;     ///< what it is, e.g. "NVLink 4 (H100/H200 SXM), 18 links"
  double bandwidth;     ///< peak bytes per second in one direction
  double latency_s;     ///< fixed cost of one transfer (launch, protocol, switch hops)
  const char* source;   ///< where the bandwidth comes from
};

/// \brief Every link of the table, fastest first (nvlink4, pcie5, ib400).
const std::vector<Link>& links();

/// \brief The keys of the table, comma-separated: "nvlink4, pcie5, ib400".
std::string link_keys();

/// \brief The link whose key is `key`. Throws `InvalidArgument` naming `key` and listing the
/// known keys when there is none.
const Link& find_link(const std::string& key);

/// \brief Modeled seconds to move `bytes` over `link` in one transfer (0 bytes: 0 s).
double transfer_s(const Link& link, double bytes, double link_fraction = kAchievableLinkFraction);

/// \brief Modeled seconds of a ring all-reduce of `bytes` (each rank's buffer) over `ranks`
/// GPUs joined by `link` (0 for one rank).
double all_reduce_s(const Link& link, double bytes, int ranks,
                    double link_fraction = kAchievableLinkFraction);

}  // namespace nanoserve::roofline
