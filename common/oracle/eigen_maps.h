#pragma once
/// \file
/// \brief Eigen views over the oracle's plain row-major buffers (internal to `common/oracle/`).
///
/// The oracle's public functions take `float*` buffers so that they read like the kernels they
/// check; inside, these maps let Eigen do the arithmetic without copying.

#include <Eigen/Core>

namespace nanoserve::oracle {

/// \brief A dynamic row-major fp32 matrix, the layout of every oracle buffer.
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// \brief A writable view of a row-major buffer.
using MatrixMap = Eigen::Map<RowMatrix>;
/// \brief A read-only view of a row-major buffer.
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
/// \brief A writable view of a contiguous vector.
using VectorMap = Eigen::Map<Eigen::VectorXf>;
/// \brief A read-only view of a contiguous vector.
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;

}  // namespace nanoserve::oracle
