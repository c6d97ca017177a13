// Row exchanges inside a group, differentiable: the all-to-all that carries tokens to the ranks
// holding their experts and back (expert parallelism), and the all-gather / reduce-scatter pair
// of sequence parallelism. Every call is a collective of the group, forward and backward; a
// failed collective throws CollectiveError.
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

// [group size * n, ...]: every rank's `x` ([n, ...], the same n on every rank) in rank order.
// Differentiable: the gradient of x is the group-wide sum of the gradients of its rows (a
// reduce-scatter).
at::Tensor gather_rows(const at::Tensor& x, Communicator& group);

// [n, ...]: this rank's rows [rank * n, (rank + 1) * n) of the group-wide sum of `y`
// ([group size * n, ...]). Differentiable: the gradient of y is every rank's output gradient,
// gathered.
at::Tensor reduce_scatter_rows(const at::Tensor& y, Communicator& group);

// [sum of recv, ...]: send[i] rows of `x` ([sum of send, ...]) go to rank i, recv[i] rows come
// from rank i (rank order both ways). Differentiable: the gradient goes back by the reverse
// all-to-all (recv and send swapped).
at::Tensor all_to_all_rows(const at::Tensor& x, const std::vector<std::int64_t>& send,
                           const std::vector<std::int64_t>& recv, Communicator& group);

// An all-to-all of equal parts, not differentiable: `x` ([group size * m] elements) sends
// elements [i * m, (i + 1) * m) to rank i; the result holds rank i's part for this rank at the
// same place. Used to tell every rank how many rows it will receive.
at::Tensor all_to_all_equal(const at::Tensor& x, Communicator& group);

// Whether `mine` holds on every rank of the group.
bool all_ranks(bool mine, Communicator& group);

}  // namespace grpo::trainer
