// The SFT warm-start step and the optimizer step it shares with GRPO.
#include <algorithm>
#include <cmath>
#include <optional>

#include <spdlog/spdlog.h>

#include "allocation_peak.h"
#include "full_model.h"
#include "step_phases.h"

namespace grpo::trainer {

core::Status optimizer_step(RunContext& ctx, TrainState& st, double lr, MeanAccumulator& acc) {
  const TrainerConfig& cfg = ctx.cfg;
  const auto bucket = static_cast<std::int64_t>(cfg.bucket_mb * 1024 * 1024);
  const ExpertGroups groups{ctx.par.ep.get(), ctx.par.edp.get()};
  const TensorShard tp = st.model->tensor_shard();
  TensorGroups tensors;
  tensors.dp = ctx.par.dp.get();
  tensors.tp = ctx.par.tp.get();
  tensors.replicas = ctx.par.data_ranks();
  tensors.plan = &sharding_plan(ctx, *st.model);
  tensors.sequence_parallel = tp.sp();
  tensors.edp = ctx.par.edp.get();
  tensors.ep = ctx.par.ep.get();
  tensors.expert_tp = ctx.par.expert_tp();
  tensors.pp = ctx.par.pp.get();
  tensors.rows = ctx.par.stage_ranks.get();
  // The optimizer's parameters are this rank's stage's (every parameter without PP).
  GRPO_TRY(double norm,
           reduce_and_clip_gradients(st.optim->params(), *ctx.comm, bucket, cfg.grad_clip,
                                     st.model->expert_parallel() ? &groups : nullptr,
                                     tp.active() || tensors.pp ? &tensors : nullptr));
  acc.add("grad_norm", norm);
  if (!std::isfinite(norm)) {
    // As verl: skip the update when the gradient is not finite (same decision on every rank,
    // since the reduced gradients are identical).
    spdlog::warn("gradient norm is not finite; optimizer step skipped");
    st.optim->zero_grad();
    return core::ok_status();
  }
  AdamWOptions o;
  const double warm = cfg.lr_warmup_steps > 0
                          ? std::min(1.0, static_cast<double>(st.optim->steps() + 1) /
                                              static_cast<double>(cfg.lr_warmup_steps))
                          : 1.0;
  o.lr = lr * warm;
  o.beta1 = cfg.betas[0];
  o.beta2 = cfg.betas[1];
  o.weight_decay = cfg.weight_decay;
  st.optim->step(o);
  st.optim->zero_grad();
  acc.add("lr", o.lr);
  return core::ok_status();
}

core::Status sft_step(RunContext& ctx, TrainState& st, std::int64_t s, StepMetrics& m) {
  const TrainerConfig& cfg = ctx.cfg;
  QwenModel& model = *st.model;
  ctx.enter_phase(s, "sft");
  ctx.fire_step_faults(s, "sft", model);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<const Example*> examples = take_examples(ctx, st, cfg.sft_batch_size);
  std::vector<std::vector<std::int64_t>> prompts;
  const auto rows = static_cast<std::int64_t>(examples.size());
  at::Tensor resp = at::full({rows, cfg.max_response_length}, Tokenizer::kPad, at::kLong);
  at::Tensor resp_valid = at::zeros({rows, cfg.max_response_length}, at::kBool);
  std::int64_t longest = 1;
  for (std::int64_t i = 0; i < rows; ++i) {
    const Example& e = *examples[static_cast<std::size_t>(i)];
    prompts.push_back(ctx.data->prompt_ids(e));
    const std::vector<std::int64_t> ans = ctx.data->target_ids(e);
    for (std::size_t j = 0; j < ans.size(); ++j) {
      resp[i][static_cast<std::int64_t>(j)] = ans[j];
      resp_valid[i][static_cast<std::int64_t>(j)] = true;
    }
    longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(ans.size()));
  }
  PromptBatch pb = make_prompt_batch(prompts);
  SequenceBatch batch = make_sequence_batch(pb.tokens, pb.valid, resp.narrow(1, 0, longest),
                                            resp_valid.narrow(1, 0, longest));

  MeanAccumulator acc;
  const std::int64_t micro_size = cfg.ppo_micro_batch_size_per_gpu;
  const std::int64_t total_tokens = batch.response_valid.sum().item<std::int64_t>();
  std::int64_t train_rows = 0;  // token rows through forward and backward, padding included
  std::vector<MicroBatch> micro;
  for (std::int64_t b = 0; b < rows; b += micro_size) {
    micro.push_back({b, std::min(rows, b + micro_size)});
    train_rows += (micro.back().end - b) * batch.tokens.size(1);
  }
  // Per micro batch: the SFT loss and its token count (the last stage's), the aux loss (each
  // stage its layers'), summed over the pipeline below.
  at::Tensor metrics = at::zeros({static_cast<std::int64_t>(micro.size()), 3}, at::kDouble);
  const bool moe = ctx.spec.is_moe();
  auto after = [&](std::size_t i, const ModelOutput& out, const SequenceBatch& mb) -> at::Tensor {
    const auto row = static_cast<std::int64_t>(i);
    ctx.tel.maybe_heartbeat(s, "sft");
    // Token-mean over the rank's whole batch: each micro batch weighs by its token share.
    const std::int64_t n = mb.response_valid.sum().item<std::int64_t>();
    const double share = static_cast<double>(n) / static_cast<double>(total_tokens);
    at::Tensor aux_term;
    if (moe) {
      metrics[row][2] = out.aux_loss.item<double>();
      aux_term = out.aux_loss * (cfg.moe_aux_loss_coef * share);
    }
    if (!ctx.par.last_stage()) return aux_term;
    ResponseStates rs = response_states(out, mb);
    at::Tensor lp = model.token_logprobs(rs.hidden, rs.tokens, 1.0, false).logprobs;
    metrics[row][0] = -lp.mean().item<double>();
    metrics[row][1] = static_cast<double>(lp.numel());
    at::Tensor loss = -lp.mean() * share;
    return aux_term.defined() ? loss + aux_term : loss;
  };
  std::optional<AllocationPeak> peak;  // trainer.measure_activation_memory
  if (cfg.measure_activation_memory) peak.emplace();
  GRPO_TRY_STATUS(train_micro_batches(ctx, model, batch, micro, after));
  const std::int64_t peak_bytes = peak ? peak->peak() : 0;
  GRPO_TRY_STATUS(pipeline_sum(ctx, metrics));
  for (std::int64_t i = 0; i < metrics.size(0); ++i) {
    acc.add("sft_loss", metrics[i][0].item<double>(), metrics[i][1].item<double>());
    if (moe) acc.add("aux_loss", metrics[i][2].item<double>());
  }
  GRPO_TRY_STATUS(optimizer_step(ctx, st, cfg.sft_lr, acc));
  GRPO_TRY(const double reshard_s, share_stage_weights(ctx, st));
  if (ctx.par.pp) acc.add("reshard_s", reshard_s);
  GRPO_TRY(auto means, acc.reduce(*ctx.comm));
  for (const auto& [k, v] : means) m.fields[k] = v;
  // One rank per TP group counts its replica's tokens.
  at::Tensor tok =
      at::tensor({batch.valid.sum().item<std::int64_t>()}, at::kLong) * ctx.counts_data();
  GRPO_TRY_STATUS(ctx.comm->allreduce_sum(tok));
  m.tokens = tok.item<std::int64_t>();
  m.fields["update_s"] = seconds_since(t0);
  m.fields["train_rows"] = train_rows;
  if (cfg.measure_activation_memory) m.fields["peak_activation_bytes"] = peak_bytes;
  return core::ok_status();
}

}  // namespace grpo::trainer
