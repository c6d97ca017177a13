#include "grpo/trainer/tensor_parallel.h"

#include <algorithm>

#include "collective_autograd.h"

namespace grpo::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kWhat = "tensor-parallel";

at::Tensor all_reduced(const at::Tensor& x, Communicator& group) {
  at::Tensor sum = x.contiguous().clone();
  check_collective(group.allreduce_sum(sum), kWhat);
  return sum;
}

struct CopyToTp : public torch::autograd::Function<CopyToTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* group) {
    store_group(ctx, *group);
    return x.clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {all_reduced(grads[0], stored_group(ctx)), at::Tensor()};
  }
};

struct ReduceFromTp : public torch::autograd::Function<ReduceFromTp> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, Communicator* group) {
    return all_reduced(x, *group);
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], at::Tensor()};
  }
};

bool differentiable(const at::Tensor& x) {
  return x.requires_grad() && at::GradMode::is_enabled();
}

// [local, ...] -> [TP * local, ...]: every rank's rows in group order. No gradient.
at::Tensor all_gathered_rows(const at::Tensor& x, Communicator& group) {
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape[0] *= group.world_size();
  at::Tensor all = at::empty(shape, x.options());
  check_collective(group.allgather(x.detach().contiguous(), all), kWhat);
  return all;
}

// All-gather forward; backward this rank's rows of the (already whole) gradient.
struct GatherWholeGrad : public torch::autograd::Function<GatherWholeGrad> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Communicator* group) {
    ctx->saved_data["rows"] = x.size(0);
    ctx->saved_data["rank"] = static_cast<std::int64_t>(group->rank());
    return all_gathered_rows(x, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::int64_t rows = ctx->saved_data["rows"].toInt();
    const std::int64_t rank = ctx->saved_data["rank"].toInt();
    return {grads[0].narrow(0, rank * rows, rows).contiguous(), at::Tensor()};
  }
};

// [TP * local, H] -> [B, T, H]: the padding rows dropped.
at::Tensor unpad(const at::Tensor& rows, const SequenceSplit& split) {
  std::vector<std::int64_t> shape{split.batch, split.length};
  for (std::int64_t d = 1; d < rows.dim(); ++d) shape.push_back(rows.size(d));
  return rows.narrow(0, 0, split.rows()).reshape(shape);
}

}  // namespace

SequenceSplit sequence_split(std::int64_t batch, std::int64_t length, const TensorShard& tp) {
  SequenceSplit s{batch, length, 0};
  s.local = (s.rows() + tp.size - 1) / tp.size;
  return s;
}

at::Tensor sp_valid(const at::Tensor& valid, const SequenceSplit& split, const TensorShard& tp,
                    const at::Device& device) {
  at::Tensor all = at::zeros({split.local * tp.size}, at::TensorOptions().dtype(at::kBool));
  if (valid.defined()) {
    all.narrow(0, 0, split.rows()).copy_(valid.reshape({-1}).to(at::kCPU));
  } else {
    all.narrow(0, 0, split.rows()).fill_(true);
  }
  return all.narrow(0, tp.rank * split.local, split.local).to(device);
}

at::Tensor sp_gather(const at::Tensor& x, const SequenceSplit& split, const TensorShard& tp) {
  return unpad(gather_rows(x, *tp.group), split);
}

at::Tensor sp_gather_whole_grad(const at::Tensor& x, const SequenceSplit& split,
                                const TensorShard& tp) {
  if (!differentiable(x)) return unpad(all_gathered_rows(x, *tp.group), split);
  return unpad(GatherWholeGrad::apply(x, tp.group), split);
}

at::Tensor sp_reduce_scatter(const at::Tensor& y, const SequenceSplit& split,
                             const TensorShard& tp) {
  at::Tensor rows = y.reshape({split.rows(), -1});
  const std::int64_t pad = split.local * tp.size - split.rows();
  if (pad > 0) rows = at::constant_pad_nd(rows, {0, 0, 0, pad});
  return reduce_scatter_rows(rows, *tp.group);
}

at::Tensor copy_to_tp(const at::Tensor& x, const TensorShard& tp) {
  if (!tp.active() || !differentiable(x)) return x;
  return CopyToTp::apply(x, tp.group);
}

at::Tensor reduce_from_tp(const at::Tensor& x, const TensorShard& tp) {
  if (!tp.active()) return x;
  if (!differentiable(x)) return all_reduced(x, *tp.group);
  return ReduceFromTp::apply(x, tp.group);
}

at::Tensor gather_last_dim(const at::Tensor& x, const TensorShard& tp) {
  if (!tp.active()) return x;
  const std::int64_t cols = x.size(-1);
  const std::int64_t rows = x.numel() / std::max<std::int64_t>(cols, 1);
  at::Tensor mine = x.detach().contiguous().reshape({1, rows * cols});
  at::Tensor all = at::empty({tp.size, rows * cols}, x.options());
  check_collective(tp.group->allgather(mine, all), kWhat);
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape.back() = cols * tp.size;
  return all.view({tp.size, rows, cols}).permute({1, 0, 2}).reshape(shape);
}

kernels::TokenLogProbs vocab_parallel_logprobs(const at::Tensor& hidden, const at::Tensor& lm_head,
                                               const at::Tensor& tokens, double temperature,
                                               bool with_entropy, bool entropy_grad,
                                               std::int64_t vocab_begin, const TensorShard& tp) {
  at::Tensor logits = at::matmul(copy_to_tp(hidden, tp), lm_head.t());
  if (logits.scalar_type() != at::kDouble) logits = logits.to(at::kFloat);
  if (temperature != 1.0) logits = logits / temperature;
  // Shifted by the group-wide row maximum (no gradient: the log-sum-exp does not depend on it).
  at::Tensor row_max = logits.detach().amax(-1);
  if (tp.active()) check_collective(tp.group->allreduce_max(row_max), kWhat);
  at::Tensor z = logits - row_max.unsqueeze(-1);
  at::Tensor log_sum = at::log(reduce_from_tp(at::exp(z).sum(-1), tp));
  const std::int64_t local = lm_head.size(0);
  at::Tensor here = (tokens >= vocab_begin) & (tokens < vocab_begin + local);
  at::Tensor index = at::where(here, tokens - vocab_begin, at::zeros_like(tokens));
  at::Tensor target = z.gather(-1, index.unsqueeze(-1)).squeeze(-1) * here.to(z.scalar_type());
  kernels::TokenLogProbs out;
  out.logprobs = reduce_from_tp(target, tp) - log_sum;
  if (with_entropy) {
    // H = -sum p log p = log_sum - sum p z, with p = exp(z - log_sum).
    auto entropy = [&](const at::Tensor& zz, const at::Tensor& ls) {
      at::Tensor weighted = (at::exp(zz - ls.unsqueeze(-1)) * zz).sum(-1);
      return ls - reduce_from_tp(weighted, tp);
    };
    if (entropy_grad) {
      out.entropy = entropy(z, log_sum);
    } else {
      torch::NoGradGuard no_grad;
      out.entropy = entropy(z.detach(), log_sum.detach());
    }
  }
  return out;
}

}  // namespace grpo::trainer
