// The forward and backward passes of an update through this rank's pipeline stage, and the
// stages' weights shared after it (step_phases.h).
#include <chrono>

#include "full_model.h"
#include "pipeline.h"
#include "step_phases.h"

namespace grpo::trainer {

core::Status train_micro_batches(RunContext& ctx, QwenModel& model, const SequenceBatch& batch,
                                 const std::vector<MicroBatch>& micro, const AfterForward& after) {
  const ParallelState& par = ctx.par;
  // This stage's decoder layers (all of them without PP: pipeline_stages gives one stage).
  const std::pair<std::int64_t, std::int64_t> layers =
      par.stages.at(static_cast<std::size_t>(par.stage()));
  const TensorShard tp = model.tensor_shard();
  PipelineSchedule s;
  s.group = par.pp.get();
  s.stage = par.stage();
  s.stages = par.dims.pp;
  s.activation = model.lm_head_weight().options();
  s.shape = [&](std::int64_t i) -> std::vector<std::int64_t> {
    const MicroBatch& m = micro.at(static_cast<std::size_t>(i));
    const std::int64_t rows = m.end - m.begin;
    const std::int64_t length = batch.tokens.size(1);
    if (tp.sp()) return {sequence_split(rows, length, tp).local, ctx.spec.hidden_size};
    return {rows, length, ctx.spec.hidden_size};
  };
  const bool last = par.last_stage();
  s.forward = [&](std::int64_t i, const at::Tensor& input) {
    const auto k = static_cast<std::size_t>(i);
    const SequenceBatch mb = batch.slice(micro[k].begin, micro[k].end);
    ModelOutput out =
        model.forward_stage(mb.tokens, mb.positions, mb.valid, input, layers.first, layers.second);
    StageForward f;
    f.loss = after(k, out, mb);
    if (!last) f.output = out.hidden;
    return f;
  };
  return run_1f1b(s, static_cast<std::int64_t>(micro.size()));
}

core::Status pipeline_sum(RunContext& ctx, at::Tensor& t) {
  if (ctx.par.pp == nullptr) return core::ok_status();
  return ctx.par.pp->allreduce_sum(t);
}

core::Result<double> share_stage_weights(RunContext& ctx, TrainState& st) {
  if (ctx.par.pp == nullptr) return 0.0;
  torch::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  const auto bucket = static_cast<std::int64_t>(ctx.cfg.bucket_mb * 1024 * 1024);
  // Stage by stage, in buckets of about bucket_mb: flatten, broadcast from the stage, copy back.
  const NamedTensors params = st.model->named_params();
  const ShardingPlan& plan = sharding_plan(ctx, *st.model);
  for (int k = 0; k < ctx.par.dims.pp; ++k) {
    std::vector<at::Tensor> mine;
    for (const auto& [name, p] : params) {
      if (plan.stage_of(name) == k) mine.push_back(p);
    }
    GRPO_TRY_STATUS(
        in_buckets(mine, bucket, [&](at::Tensor& flat) { return ctx.par.pp->broadcast(flat, k); }));
  }
  return seconds_since(t0);
}

}  // namespace grpo::trainer
