#pragma once
/// \file
/// \brief A `ForwardBatch` as bytes and back: the plan of one pass that rank 0 (which runs the
/// scheduler) broadcasts to the other ranks of a tensor-parallel run, so that every rank runs
/// the same rows over the same block tables (chapter 9).

#include <cstdint>
#include <vector>

#include "common/engine/model/forward_batch.h"

namespace nanoserve::engine {

/// \brief The bytes of `batch` (tokens, chunks with their block ids, logit rows, slots, copies).
///
/// \par Example
/// \snippet tests/ch09/test_tensor_parallel.cpp encode_batch
std::vector<std::uint8_t> encode_batch(const ForwardBatch& batch);

/// \brief The batch `encode_batch` wrote; throws `InvalidArgument` for malformed bytes.
ForwardBatch decode_batch(const std::vector<std::uint8_t>& bytes);

}  // namespace nanoserve::engine
