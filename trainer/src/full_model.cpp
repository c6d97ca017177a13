#include "full_model.h"

#include "grpo/trainer/tensor_io.h"

namespace grpo::trainer {
using core::ErrorKind;
using core::make_error;

const ShardingPlan& sharding_plan(const RunContext& ctx, const QwenModel& model) {
  if (!ctx.plan_cache) {
    ShardLayout layout = ctx.par.shard_layout();
    // A model without an EP group holds every expert (the layout's EP may still be 1).
    if (!model.expert_parallel()) layout.stage_expert_owners.clear();
    ctx.plan_cache = std::make_shared<const ShardingPlan>(
        ctx.spec, QwenModel::whole_shapes(ctx.spec, model.ops()), layout);
  }
  return *ctx.plan_cache;
}

namespace {

// The TP slices of `f` from the ranks holding them, joined on rank 0 (every rank when `to_all`);
// `mine` is this rank's slice (undefined when it holds none). Slice t is on rank owner + t: TP
// (and ETP, which equals it when the experts are split) is the rank map's innermost dimension, so
// a TP group is consecutive ranks starting at the owner (its stage's, or the expert's EP member).
core::Status gather_slices(RunContext& ctx, const Placement& f, const at::Tensor& mine, bool to_all,
                           const std::function<void(const Placement&, const at::Tensor&)>& sink) {
  const int size = static_cast<int>(f.slices.size());
  const bool wants = to_all || ctx.rank == 0;
  at::Tensor whole = wants ? at::empty(f.shape, at::kFloat) : at::Tensor();
  for (int t = 0; t < size; ++t) {
    const int src = f.owner + t;
    const TpSlice& s = f.slices.at(static_cast<std::size_t>(t));
    std::vector<std::int64_t> shape = f.shape;
    shape[static_cast<std::size_t>(s.dim)] = s.length;
    at::Tensor buf = ctx.rank == src && mine.defined() ? mine.detach().to(at::kFloat).clone()
                                                       : at::empty(shape, at::kFloat);
    if (src != 0 || to_all) GRPO_TRY_STATUS(ctx.comm->broadcast(buf, src));
    if (wants) whole.narrow(s.dim, s.offset, s.length).copy_(buf);
  }
  if (wants) sink(f, whole);
  return core::ok_status();
}

}  // namespace

core::Status gather_full(RunContext& ctx, const std::vector<Placement>& full,
                         const NamedTensors& local, bool to_all,
                         const std::function<void(const Placement&, const at::Tensor&)>& sink) {
  torch::NoGradGuard no_grad;
  const std::map<std::string, at::Tensor> mine(local.begin(), local.end());
  for (const Placement& f : full) {
    auto it = mine.find(f.name);
    if (f.sliced()) {
      GRPO_TRY_STATUS(
          gather_slices(ctx, f, it != mine.end() ? it->second : at::Tensor(), to_all, sink));
      continue;
    }
    const bool held = f.owner == ctx.rank && it != mine.end();
    // Rank 0's own tensors need no transfer unless every rank wants them.
    if (f.owner == 0 && !to_all) {
      if (ctx.rank == 0 && held) sink(f, it->second.detach().to(at::kFloat));
      continue;
    }
    at::Tensor buf =
        held ? it->second.detach().to(at::kFloat).clone() : at::empty(f.shape, at::kFloat);
    GRPO_TRY_STATUS(ctx.comm->broadcast(buf, f.owner));
    if (to_all || ctx.rank == 0) sink(f, buf);
  }
  return core::ok_status();
}

void keep_part(const Placement& f, const at::Tensor& whole, at::Tensor& local) {
  if (const auto& s = f.own) {
    local.copy_(whole.narrow(s->dim, s->offset, s->length));
  } else {
    local.copy_(whole);
  }
}

core::Status scatter_full(RunContext& ctx, const std::vector<Placement>& full,
                          const std::map<std::string, at::Tensor>& source,
                          const NamedTensors& local,
                          const std::function<int(const Placement&)>& from) {
  torch::NoGradGuard no_grad;
  // Each root checks what it sends, and all ranks learn the first problem, so all fail alike.
  std::int64_t bad = 0;  // 1 + the index of an entry this rank sends but lacks
  for (std::size_t i = 0; i < full.size() && bad == 0; ++i) {
    if (from(full[i]) != ctx.rank) continue;
    auto it = source.find(full[i].name);
    if (it == source.end() || it->second.sizes().vec() != full[i].shape) {
      bad = static_cast<std::int64_t>(i) + 1;
    }
  }
  at::Tensor flag = at::tensor({bad}, at::kLong);
  GRPO_TRY_STATUS(ctx.comm->allreduce_max(flag));
  if (const std::int64_t b = flag.item<std::int64_t>(); b > 0) {
    return make_error(ErrorKind::kInvalidValue, "checkpoint lacks or mismatches tensor " +
                                                    full[static_cast<std::size_t>(b - 1)].name);
  }
  std::map<std::string, at::Tensor> mine(local.begin(), local.end());
  for (const Placement& f : full) {
    const int root = from(f);
    at::Tensor buf = ctx.rank == root ? source.at(f.name).to(at::kFloat).contiguous().clone()
                                      : at::empty(f.shape, at::kFloat);
    GRPO_TRY_STATUS(ctx.comm->broadcast(buf, root));
    auto it = mine.find(f.name);
    if (it != mine.end()) keep_part(f, buf, it->second);
  }
  return core::ok_status();
}

core::Status copy_own_parts(const std::vector<Placement>& full,
                            const std::map<std::string, at::Tensor>& source,
                            const NamedTensors& local) {
  torch::NoGradGuard no_grad;
  for (const Placement& f : full) {
    auto it = source.find(f.name);
    if (it == source.end() || it->second.sizes().vec() != f.shape) {
      return make_error(ErrorKind::kInvalidValue,
                        "checkpoint lacks or mismatches tensor " + f.name);
    }
  }
  std::map<std::string, at::Tensor> mine(local.begin(), local.end());
  for (const Placement& f : full) {
    auto it = mine.find(f.name);
    if (it != mine.end()) keep_part(f, source.at(f.name), it->second);
  }
  return core::ok_status();
}

core::Result<std::string> full_weights_sha256(RunContext& ctx, const TrainState& st) {
  const QwenModel& model = *st.model;
  const NamedTensors weights = model_weights(st);
  // Under PP with mixed precision a rank holds fp32 masters of its stage only.
  const bool whole_here = !st.optim->mixed_precision() || ctx.par.dims.pp == 1;
  if (!model.expert_parallel() && !model.tensor_shard().active() && whole_here) {
    return tensors_sha256(weights);
  }
  NamedTensors all;
  GRPO_TRY_STATUS(gather_full(
      ctx, sharding_plan(ctx, model).params(), weights, true,
      [&](const Placement& f, const at::Tensor& t) { all.emplace_back(f.name, t.clone()); }));
  return tensors_sha256(all);
}

}  // namespace grpo::trainer
