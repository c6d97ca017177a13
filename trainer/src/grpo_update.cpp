// The update phase of a GRPO step: PPO epochs x mini batches x micro batches over the rollout,
// the clipped policy loss (with KL and entropy terms) from the kernels, gradient accumulation and
// an optimizer step per mini batch.
#include <algorithm>

#include "step_phases.h"

namespace grpo::trainer {
namespace {

kernels::PolicyLossParams policy_loss_params(const TrainerConfig& cfg) {
  kernels::PolicyLossParams lp;
  lp.clip_ratio_low = cfg.effective_clip_low();
  lp.clip_ratio_high = cfg.effective_clip_high();
  lp.clip_ratio_c = cfg.clip_ratio_c;
  lp.use_kl_loss = cfg.use_kl_loss;
  lp.kl_type = cfg.kl_loss_type == "kl"    ? kernels::KlType::kKl
               : cfg.kl_loss_type == "abs" ? kernels::KlType::kAbs
               : cfg.kl_loss_type == "mse" ? kernels::KlType::kMse
                                           : kernels::KlType::kLowVarKl;
  lp.kl_loss_coef = cfg.kl_loss_coef;
  lp.entropy_coeff = cfg.entropy_coeff;
  lp.temperature = cfg.temperature;
  return lp;
}

}  // namespace

core::Result<double> update_phase(RunContext& ctx, TrainState& st, std::int64_t s, const Rollout& r,
                                  MeanAccumulator& acc) {
  const TrainerConfig& cfg = ctx.cfg;
  QwenModel& model = *st.model;
  ctx.enter_phase(s, "update");
  ctx.fire_step_faults(s, "update", model);
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t rows = r.rows();
  const std::int64_t micro = cfg.ppo_micro_batch_size_per_gpu;
  const std::int64_t mini_rows = cfg.ppo_mini_batch_size * r.group_size / ctx.par.data_ranks();
  const kernels::PolicyLossParams lp = policy_loss_params(cfg);
  at::Tensor adv_tok =
      r.advantages.unsqueeze(1).expand({rows, r.generation.tokens.size(1)}).contiguous();
  for (std::int64_t epoch = 0; epoch < cfg.ppo_epochs; ++epoch) {
    for (std::int64_t mb0 = 0; mb0 < rows; mb0 += mini_rows) {
      const std::int64_t mb1 = std::min(rows, mb0 + mini_rows);
      for (std::int64_t b = mb0; b < mb1; b += micro) {
        const std::int64_t e = std::min(mb1, b + micro);
        SequenceBatch mbatch = r.batch.slice(b, e);
        ResponseStates rs = response_states(model, mbatch);
        if (rs.tokens.numel() == 0) {
          // Nothing to learn from; under expert parallelism the backward is still a collective
          // of the EP group, so run it with a zero loss.
          if (model.expert_parallel()) ((rs.hidden.sum() + rs.aux_loss) * 0.0).backward();
          continue;
        }
        kernels::PolicyLossInputs in;
        in.tokens = rs.tokens;
        in.old_logprobs =
            r.old_logprobs.narrow(0, b, e - b).reshape({-1}).index_select(0, rs.index);
        if (cfg.use_kl_loss) {
          in.ref_logprobs =
              r.ref_logprobs.narrow(0, b, e - b).reshape({-1}).index_select(0, rs.index);
        }
        in.advantages = adv_tok.narrow(0, b, e - b).reshape({-1}).index_select(0, rs.index);
        kernels::PolicyLossOutputs out = model.policy_loss(rs.hidden, in, lp);
        at::Tensor loss = out.loss;
        if (ctx.spec.is_moe()) loss = loss + cfg.moe_aux_loss_coef * rs.aux_loss;
        // Gradient accumulation: each micro batch weighs by its share of the mini batch's rows.
        const double share = static_cast<double>(e - b) / static_cast<double>(mb1 - mb0);
        (loss * share).backward();
        acc.add("loss", loss.item<double>());
        acc.add("pg_loss", out.pg_loss.item<double>());
        acc.add("kl", out.kl.item<double>());
        acc.add("entropy", out.entropy.item<double>());
        acc.add("clip_frac", out.clip_frac.item<double>());
        if (ctx.spec.is_moe()) acc.add("aux_loss", rs.aux_loss.item<double>());
        ctx.tel.maybe_heartbeat(s, "update");
      }
      GRPO_TRY_STATUS(optimizer_step(ctx, st, cfg.lr, acc));
    }
  }
  return seconds_since(t0);
}

}  // namespace grpo::trainer
