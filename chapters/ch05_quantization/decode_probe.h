#pragma once
/// \file
/// \brief Decode speed through the kernels, in CPU time, with an optional step-by-step check
/// against the CPU oracle on the same (dequantized) weights.

#include <memory>
#include <string>
#include <vector>

#include "common/allclose.h"
#include "common/engine/model/device_model.h"
#include "common/generation/generate.h"
#include "common/model.h"

namespace nanoserve::ch05 {

/// \brief What one greedy generation through the kernels measured.
struct DecodeRun {
  std::vector<int> tokens;     ///< prompt + generated tokens
  int prompt_tokens = 0;       ///< length of the prompt
  double prefill_ms = 0;       ///< CPU time of the prompt's forward pass
  double decode_ms = 0;        ///< CPU time of all one-token steps
  int decode_steps = 0;        ///< one-token steps timed
  bool checked = false;        ///< the oracle ran alongside
  double max_abs_diff = 0;     ///< max |Δlogit| against the oracle over every step
  bool check_ok = true;        ///< every step within the tolerance
  std::string device;          ///< the decoder's device name
  /// \brief Decode tokens per second of CPU time (0 when no step ran).
  double tokens_per_second() const { return decode_ms > 0 ? 1e3 * decode_steps / decode_ms : 0.0; }
};

/// \brief What the probe clock measures: "CPU time" of this process (the simulator runs every
/// kernel on the calling thread, so this is robust to other load on a shared machine).
const char* probe_clock_name();

/// \brief Greedy generation of `steps` tokens from `prompt` through `device` (activations in
/// `device`'s storage type, a naive KV cache of `max_seq_len` positions in `kv_dtype`), timing
/// every forward pass; with `oracle` (the fp32 model the device's weights stand for) every step's
/// logits are also compared within `tolerance`.
DecodeRun measure_decode(const engine::DeviceModel& device, const std::vector<int>& prompt,
                         int steps, int max_seq_len, DType kv_dtype, const Model* oracle,
                         Tolerance tolerance);

}  // namespace nanoserve::ch05
