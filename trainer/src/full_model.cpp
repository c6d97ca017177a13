#include "full_model.h"

#include "grpo/trainer/tensor_io.h"

namespace grpo::trainer {
using core::ErrorKind;
using core::make_error;

const std::vector<FullTensor>& full_params(const RunContext& ctx, const QwenModel& model) {
  if (ctx.full_params_cache) return *ctx.full_params_cache;
  const QwenModel whole(ctx.spec, model.ops(),
                        at::TensorOptions().dtype(at::kFloat).device(at::kMeta), nullptr);
  std::vector<FullTensor> out;
  for (const auto& [name, meta] : whole.named_params()) {
    FullTensor f{name, meta.sizes().vec(), 0};
    f.stage = ctx.par.stage_of(name);
    if (!ctx.par.stage_tp_members.empty()) {
      f.owner = ctx.par.stage_tp_members.at(static_cast<std::size_t>(f.stage)).front();
    }
    const std::int64_t e = expert_index(name);
    if (e >= 0 && model.expert_parallel())
      f.owner = ctx.par.owner_of_expert(e, ctx.spec.num_experts, f.stage);
    f.sliced = tp_slice(ctx.spec, name, 0, ctx.par.dims.tp, ctx.par.expert_tp()).has_value();
    out.push_back(std::move(f));
  }
  ctx.full_params_cache = std::make_shared<const std::vector<FullTensor>>(std::move(out));
  return *ctx.full_params_cache;
}

std::vector<FullTensor> full_optimizer_states(const std::vector<FullTensor>& params) {
  std::vector<FullTensor> out;
  for (const char* prefix : {"exp_avg.", "exp_avg_sq."}) {
    for (const FullTensor& p : params) {
      out.push_back({prefix + p.name, p.shape, p.owner, p.sliced, p.stage});
    }
  }
  return out;
}

namespace {

// The TP slices of `f` from the ranks holding them, joined on rank 0 (every rank when `to_all`);
// `mine` is this rank's slice (undefined when it holds none). Slice t is on rank owner + t: TP
// (and ETP, which equals it when the experts are split) is the rank map's innermost dimension, so
// a TP group is consecutive ranks starting at the owner (its stage's, or the expert's EP member).
core::Status gather_slices(RunContext& ctx, const FullTensor& f, const at::Tensor& mine,
                           bool to_all,
                           const std::function<void(const FullTensor&, const at::Tensor&)>& sink) {
  const int size = ctx.par.dims.tp;
  const bool wants = to_all || ctx.rank == 0;
  at::Tensor whole = wants ? at::empty(f.shape, at::kFloat) : at::Tensor();
  for (int t = 0; t < size; ++t) {
    const int src = f.owner + t;
    const TpSlice s = *tp_slice(ctx.spec, f.name, t, size, ctx.par.expert_tp());
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

core::Status gather_full(RunContext& ctx, const std::vector<FullTensor>& full,
                         const NamedTensors& local, bool to_all,
                         const std::function<void(const FullTensor&, const at::Tensor&)>& sink) {
  torch::NoGradGuard no_grad;
  const std::map<std::string, at::Tensor> mine(local.begin(), local.end());
  for (const FullTensor& f : full) {
    auto it = mine.find(f.name);
    if (f.sliced) {
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

std::optional<TpSlice> own_slice(const RunContext& ctx, const FullTensor& f) {
  if (!f.sliced) return std::nullopt;
  return tp_slice(ctx.spec, f.name, ctx.par.coords.tp, ctx.par.dims.tp, ctx.par.expert_tp());
}

void keep_part(const RunContext& ctx, const FullTensor& f, const at::Tensor& whole,
               at::Tensor& local) {
  if (const auto s = own_slice(ctx, f)) {
    local.copy_(whole.narrow(s->dim, s->offset, s->length));
  } else {
    local.copy_(whole);
  }
}

core::Status scatter_full(RunContext& ctx, const std::vector<FullTensor>& full,
                          const std::map<std::string, at::Tensor>& source,
                          const NamedTensors& local,
                          const std::function<int(const FullTensor&)>& from) {
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
  for (const FullTensor& f : full) {
    const int root = from(f);
    at::Tensor buf = ctx.rank == root ? source.at(f.name).to(at::kFloat).contiguous().clone()
                                      : at::empty(f.shape, at::kFloat);
    GRPO_TRY_STATUS(ctx.comm->broadcast(buf, root));
    auto it = mine.find(f.name);
    if (it != mine.end()) keep_part(ctx, f, buf, it->second);
  }
  return core::ok_status();
}

core::Status copy_own_parts(const RunContext& ctx, const std::vector<FullTensor>& full,
                            const std::map<std::string, at::Tensor>& source,
                            const NamedTensors& local) {
  torch::NoGradGuard no_grad;
  for (const FullTensor& f : full) {
    auto it = source.find(f.name);
    if (it == source.end() || it->second.sizes().vec() != f.shape) {
      return make_error(ErrorKind::kInvalidValue,
                        "checkpoint lacks or mismatches tensor " + f.name);
    }
  }
  std::map<std::string, at::Tensor> mine(local.begin(), local.end());
  for (const FullTensor& f : full) {
    auto it = mine.find(f.name);
    if (it != mine.end()) keep_part(ctx, f, source.at(f.name), it->second);
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
      ctx, full_params(ctx, model), weights, true,
      [&](const FullTensor& f, const at::Tensor& t) { all.emplace_back(f.name, t.clone()); }));
  return tensors_sha256(all);
}

}  // namespace grpo::trainer
