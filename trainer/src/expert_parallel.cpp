#include "grpo/trainer/expert_parallel.h"

#include <algorithm>
#include <cstdint>

#include "collective_autograd.h"

namespace grpo::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void check(const core::Status& st) {
  check_collective(st, "expert-parallel");
}

std::int64_t offset_of(const std::vector<std::int64_t>& counts, int rank) {
  std::int64_t off = 0;
  for (int r = 0; r < rank; ++r) off += counts[static_cast<std::size_t>(r)];
  return off;
}

at::Tensor gather_raw(const at::Tensor& x, const std::vector<std::int64_t>& counts,
                      Communicator& group) {
  const std::int64_t most =
      std::max<std::int64_t>(1, *std::max_element(counts.begin(), counts.end()));
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape[0] = most;
  at::Tensor padded = at::zeros(shape, x.options());
  padded.narrow(0, 0, x.size(0)).copy_(x);
  shape[0] = most * group.world_size();
  at::Tensor all = at::empty(shape, x.options());
  check(group.allgather(padded, all));
  std::vector<at::Tensor> parts;
  for (int r = 0; r < group.world_size(); ++r) {
    parts.push_back(all.narrow(0, r * most, counts[static_cast<std::size_t>(r)]));
  }
  return at::cat(parts);
}

at::Tensor reduce_raw(const at::Tensor& y, const std::vector<std::int64_t>& counts,
                      Communicator& group) {
  const int me = group.rank();
  if (std::all_of(counts.begin(), counts.end(), [&](std::int64_t c) { return c == counts[0]; })) {
    std::vector<std::int64_t> shape = y.sizes().vec();
    shape[0] = counts[0];
    at::Tensor out = at::empty(shape, y.options());
    check(group.reduce_scatter(y.contiguous(), out));
    return out;
  }
  at::Tensor sum = y.contiguous().clone();
  check(group.allreduce_sum(sum));
  return sum.narrow(0, offset_of(counts, me), counts[static_cast<std::size_t>(me)]).clone();
}

Communicator& group_of(AutogradContext* ctx) {
  return stored_group(ctx);
}

void remember(AutogradContext* ctx, const std::vector<std::int64_t>& counts, Communicator& group) {
  ctx->saved_data["counts"] = counts;
  store_group(ctx, group);
}

struct GatherRows : public torch::autograd::Function<GatherRows> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x,
                            const std::vector<std::int64_t>& counts, Communicator* group) {
    remember(ctx, counts, *group);
    return gather_raw(x, counts, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<std::int64_t> counts = ctx->saved_data["counts"].toIntVector();
    return {reduce_raw(grads[0], counts, group_of(ctx)), at::Tensor(), at::Tensor()};
  }
};

struct ReduceScatterRows : public torch::autograd::Function<ReduceScatterRows> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y,
                            const std::vector<std::int64_t>& counts, Communicator* group) {
    remember(ctx, counts, *group);
    return reduce_raw(y, counts, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<std::int64_t> counts = ctx->saved_data["counts"].toIntVector();
    return {gather_raw(grads[0].contiguous(), counts, group_of(ctx)), at::Tensor(), at::Tensor()};
  }
};

std::int64_t total(const std::vector<std::int64_t>& counts) {
  std::int64_t n = 0;
  for (std::int64_t c : counts) n += c;
  return n;
}

at::Tensor all_to_all_raw(const at::Tensor& x, const std::vector<std::int64_t>& send,
                          const std::vector<std::int64_t>& recv, Communicator& group) {
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape[0] = total(recv);
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

at::Tensor gather_rows(const at::Tensor& x, const std::vector<std::int64_t>& counts,
                       Communicator& group) {
  if (!x.requires_grad() || !at::GradMode::is_enabled()) return gather_raw(x, counts, group);
  return GatherRows::apply(x, counts, &group);
}

at::Tensor reduce_scatter_rows(const at::Tensor& y, const std::vector<std::int64_t>& counts,
                               Communicator& group) {
  if (!y.requires_grad() || !at::GradMode::is_enabled()) return reduce_raw(y, counts, group);
  return ReduceScatterRows::apply(y, counts, &group);
}

bool all_ranks(bool mine, Communicator& group) {
  at::Tensor not_mine = at::tensor({mine ? 0 : 1}, at::kLong);
  check(group.allreduce_max(not_mine));
  return not_mine.item<std::int64_t>() == 0;
}

}  // namespace grpo::trainer
