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
  const std::int64_t micro_size = cfg.ppo_micro_batch_size_per_gpu;
  const std::int64_t mini_rows = cfg.ppo_mini_batch_size * r.group_size / ctx.par.data_ranks();
  const kernels::PolicyLossParams lp = policy_loss_params(cfg);
  at::Tensor adv_tok =
      r.advantages.unsqueeze(1).expand({rows, r.generation.tokens.size(1)}).contiguous();
  const bool moe = ctx.spec.is_moe();
  const double coef = cfg.moe_aux_loss_coef;
  for (std::int64_t epoch = 0; epoch < cfg.ppo_epochs; ++epoch) {
    for (std::int64_t mb0 = 0; mb0 < rows; mb0 += mini_rows) {
      const std::int64_t mb1 = std::min(rows, mb0 + mini_rows);
      // A micro batch without response tokens has nothing to learn from: it is left out, except
      // under expert parallelism, where every forward and backward is a collective of the EP
      // group: it then runs with a zero loss. Every stage of a pipeline decides alike (same data).
      std::vector<MicroBatch> micro;
      std::vector<bool> learns;
      for (std::int64_t b = mb0; b < mb1; b += micro_size) {
        const std::int64_t e = std::min(mb1, b + micro_size);
        const bool any = r.batch.response_valid.narrow(0, b, e - b).any().item<bool>();
        if (!any && !model.expert_parallel()) continue;
        micro.push_back({b, e});
        learns.push_back(any);
      }
      // Per micro batch: loss (without the aux term), pg_loss, kl, entropy, clip_frac (the last
      // stage's), aux_loss (each stage its layers'), summed over the pipeline below.
      at::Tensor metrics = at::zeros({static_cast<std::int64_t>(micro.size()), 6}, at::kDouble);
      const bool last = ctx.par.last_stage();
      auto after = [&](std::size_t i, const ModelOutput& out,
                       const SequenceBatch& mb) -> at::Tensor {
        const auto row = static_cast<std::int64_t>(i);
        const std::int64_t b = micro[i].begin, e = micro[i].end;
        // Gradient accumulation: each micro batch weighs by its share of the mini batch's rows.
        const double share = static_cast<double>(e - b) / static_cast<double>(mb1 - mb0);
        ctx.tel.maybe_heartbeat(s, "update");
        at::Tensor aux_term;
        if (moe) {
          metrics[row][5] = out.aux_loss.item<double>();
          aux_term = out.aux_loss * (coef * share);
        }
        if (!learns[i]) {
          // Zero, but through the stage's graph (the EP backward is a collective).
          return last ? (out.hidden.sum() + out.aux_loss) * 0.0 : out.aux_loss * 0.0;
        }
        if (!last) return aux_term;
        ResponseStates rs = response_states(out, mb);
        kernels::PolicyLossInputs in;
        in.tokens = rs.tokens;
        in.old_logprobs =
            r.old_logprobs.narrow(0, b, e - b).reshape({-1}).index_select(0, rs.index);
        if (cfg.use_kl_loss) {
          in.ref_logprobs =
              r.ref_logprobs.narrow(0, b, e - b).reshape({-1}).index_select(0, rs.index);
        }
        in.advantages = adv_tok.narrow(0, b, e - b).reshape({-1}).index_select(0, rs.index);
        kernels::PolicyLossOutputs o = model.policy_loss(rs.hidden, in, lp);
        metrics[row][0] = o.loss.item<double>();
        metrics[row][1] = o.pg_loss.item<double>();
        metrics[row][2] = o.kl.item<double>();
        metrics[row][3] = o.entropy.item<double>();
        metrics[row][4] = o.clip_frac.item<double>();
        at::Tensor loss = o.loss * share;
        return aux_term.defined() ? loss + aux_term : loss;
      };
      GRPO_TRY_STATUS(train_micro_batches(ctx, model, r.batch, micro, after));
      GRPO_TRY_STATUS(pipeline_sum(ctx, metrics));
      for (std::size_t i = 0; i < micro.size(); ++i) {
        if (!learns[i]) continue;
        const at::Tensor m = metrics[static_cast<std::int64_t>(i)];
        const double aux = m[5].item<double>();
        acc.add("loss", m[0].item<double>() + (moe ? coef * aux : 0.0));
        acc.add("pg_loss", m[1].item<double>());
        acc.add("kl", m[2].item<double>());
        acc.add("entropy", m[3].item<double>());
        acc.add("clip_frac", m[4].item<double>());
        if (moe) acc.add("aux_loss", aux);
      }
      GRPO_TRY_STATUS(optimizer_step(ctx, st, cfg.lr, acc));
    }
  }
  GRPO_TRY(const double reshard_s, share_stage_weights(ctx, st));
  if (ctx.par.pp) acc.add("reshard_s", reshard_s);
  return seconds_since(t0);
}

}  // namespace grpo::trainer
