// Token exchange for expert parallelism, differentiable: the rows every rank of an EP group holds
// are gathered for the experts, and each rank gets back the group-wide sum of the expert outputs
// for its own rows. Built on all-gather and all-reduce (Gloo in LibTorch 1.13 has no
// variable-size all-to-all in its C++ API), so each rank receives every row of its group rather
// than only those routed to its experts: docs/parallelism.md gives the volume. Every call is a
// collective of the group, forward and backward; a failed collective throws CollectiveError.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "grpo/trainer/communicator.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

// A collective failed inside a forward or backward pass (a peer died, a timeout): the run ends
// with the communication exit code.
struct CollectiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every rank's row count, in group rank order.
std::vector<std::int64_t> gather_counts(std::int64_t rows, Communicator& group);

// [sum of counts, ...]: every rank's `x` ([counts[me], ...]) in rank order. Differentiable: the
// gradient of x is the group-wide sum of the gradients of its rows (a reduce-scatter).
at::Tensor gather_rows(const at::Tensor& x, const std::vector<std::int64_t>& counts,
                       Communicator& group);

// [counts[me], ...]: this rank's rows of the group-wide sum of `y` ([sum of counts, ...]).
// Differentiable: the gradient of y is every rank's output gradient, gathered.
at::Tensor reduce_scatter_rows(const at::Tensor& y, const std::vector<std::int64_t>& counts,
                               Communicator& group);

// Whether `mine` holds on every rank of the group.
bool all_ranks(bool mine, Communicator& group);

}  // namespace grpo::trainer
