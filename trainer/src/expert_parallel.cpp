#include "grpo/trainer/expert_parallel.h"

#include <cstdint>
#include <numeric>

#include "collective_autograd.h"

namespace grpo::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void check(const core::Status& st) {
  check_collective(st, "expert-parallel");
}

// Every rank's `x` ([n, ...], the same n everywhere) in rank order: [group size * n, ...].
at::Tensor gather_raw(const at::Tensor& x, Communicator& group) {
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape[0] *= group.world_size();
  at::Tensor all = at::empty(shape, x.options());
  check(group.allgather(x.contiguous(), all));
  return all;
}

// This rank's n rows of the group-wide sum of `y` ([group size * n, ...]).
at::Tensor reduce_raw(const at::Tensor& y, Communicator& group) {
  std::vector<std::int64_t> shape = y.sizes().vec();
  shape[0] /= group.world_size();
  at::Tensor out = at::empty(shape, y.options());
  check(group.reduce_scatter(y.contiguous(), out));
  return out;
}

Communicator& group_of(AutogradContext* ctx) {
  return stored_group(ctx);
}

struct GatherRows : public torch::autograd::Function<GatherRows> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* group) {
    store_group(ctx, *group);
    return gather_raw(x, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {reduce_raw(grads[0], group_of(ctx)), at::Tensor()};
  }
};

struct ReduceScatterRows : public torch::autograd::Function<ReduceScatterRows> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y, Communicator* group) {
    store_group(ctx, *group);
    return reduce_raw(y, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {gather_raw(grads[0], group_of(ctx)), at::Tensor()};
  }
};

at::Tensor all_to_all_raw(const at::Tensor& x, const std::vector<std::int64_t>& send,
                          const std::vector<std::int64_t>& recv, Communicator& group) {
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape[0] = std::accumulate(recv.begin(), recv.end(), std::int64_t{0});
  at::Tensor out = at::empty(shape, x.options());
  check(group.alltoall(x.contiguous(), out, send, recv));
  return out;
}

struct AllToAllRows : public torch::autograd::Function<AllToAllRows> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x,
                            const std::vector<std::int64_t>& send,
                            const std::vector<std::int64_t>& recv, Communicator* group) {
    ctx->saved_data["send"] = send;
    ctx->saved_data["recv"] = recv;
    store_group(ctx, *group);
    return all_to_all_raw(x, send, recv, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<std::int64_t> send = ctx->saved_data["send"].toIntVector();
    const std::vector<std::int64_t> recv = ctx->saved_data["recv"].toIntVector();
    return {all_to_all_raw(grads[0], recv, send, group_of(ctx)), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor all_to_all_rows(const at::Tensor& x, const std::vector<std::int64_t>& send,
                           const std::vector<std::int64_t>& recv, Communicator& group) {
  if (!x.requires_grad() || !at::GradMode::is_enabled())
    return all_to_all_raw(x, send, recv, group);
  return AllToAllRows::apply(x, send, recv, &group);
}

at::Tensor all_to_all_equal(const at::Tensor& x, Communicator& group) {
  const std::vector<std::int64_t> parts(static_cast<std::size_t>(group.world_size()),
                                        x.numel() / group.world_size());
  return all_to_all_raw(x.reshape({-1}), parts, parts, group);
}

at::Tensor gather_rows(const at::Tensor& x, Communicator& group) {
  if (!x.requires_grad() || !at::GradMode::is_enabled()) return gather_raw(x, group);
  return GatherRows::apply(x, &group);
}

at::Tensor reduce_scatter_rows(const at::Tensor& y, Communicator& group) {
  if (!y.requires_grad() || !at::GradMode::is_enabled()) return reduce_raw(y, group);
  return ReduceScatterRows::apply(y, &group);
}

bool all_ranks(bool mine, Communicator& group) {
  at::Tensor not_mine = at::tensor({mine ? 0 : 1}, at::kLong);
  check(group.allreduce_max(not_mine));
  return not_mine.item<std::int64_t>() == 0;
}

}  // namespace grpo::trainer
