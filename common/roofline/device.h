#pragma once
/// \file
/// \brief The named GPUs the roofline model knows: each one's peak memory bandwidth, dense
/// tensor-core and fp32 FLOP/s, SM count, L2 and memory size, from the vendor's datasheet
/// (docs/roofline.md has the table with its sources). These are peaks as printed by NVIDIA,
/// not measurements: `pass_cost.h` says how much of them a kernel is assumed to reach.

#include <string>
#include <vector>

namespace nanoserve::roofline {

/// \brief One GPU of the table. Every figure is the vendor's, for the dense (no 2:4
/// sparsity) case; `source` names the document it comes from.
struct Device {
  const char* key;            ///< the name `--cost-device` takes, e.g. "h200"
  const char* label;          ///< short name for tables, e.g. "H200"
  const char* name;           ///< the product, e.g. "NVIDIA H200 SXM 141GB"
  double memory_bandwidth;    ///< peak DRAM (HBM/GDDR) bandwidth, bytes per second
  double tensor_flops;        ///< dense fp16/bf16 tensor-core FLOP/s with fp32 accumulation
  double fp32_flops;          ///< fp32 FLOP/s on the CUDA cores (non-tensor)
  int sm_count;               ///< streaming multiprocessors
  double l2_bytes;            ///< L2 cache, bytes
  double memory_bytes;        ///< device memory, bytes
  const char* source;         ///< the datasheet / whitepaper the figures are from
};

/// \brief Every device of the table, in a fixed order (a100, h100, h200, l4, rtx4090).
const std::vector<Device>& devices();

/// \brief The keys of the table, comma-separated: "a100, h100, h200, l4, rtx4090".
std::string device_keys();

/// \brief The device whose key is `key` (exact, lower case). Throws `InvalidArgument`
/// naming `key` and listing the known keys when there is none.
const Device& find_device(const std::string& key);

}  // namespace nanoserve::roofline
