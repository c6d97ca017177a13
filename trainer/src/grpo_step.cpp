// A GRPO step: the rollout phases (grpo_rollout.cpp), the update (grpo_update.cpp), then the
// step's metrics reduced over ranks and, for MoE models, the expert-load events. Also the switch
// from SFT to GRPO.
#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "grpo/core/telemetry_events.h"
#include "step_phases.h"

namespace grpo::trainer {
using json = nlohmann::json;

namespace {

// Sums each layer's tokens per expert over ranks (the first pipeline stage's); rank 0 emits
// expert_load and, above the threshold, EXPERT_IMBALANCE. Returns [{layer, imbalance}] for the step
// event.
json expert_load_events(RunContext& ctx, std::int64_t s, std::vector<ExpertLoad> load) {
  const TrainerConfig& cfg = ctx.cfg;
  json layers = json::array();
  for (ExpertLoad& l : load) {
    // Every stage of a pipeline routed the same tokens (the rollout's forward runs every layer):
    // the first stage's count.
    at::Tensor t = at::tensor(l.tokens_per_expert, at::kLong) * (ctx.par.first_stage() ? 1 : 0);
    (void)ctx.comm->allreduce_sum(t);  // same order on every rank; errors surface at the next one
    std::vector<std::int64_t> counts(t.data_ptr<std::int64_t>(),
                                     t.data_ptr<std::int64_t>() + t.numel());
    std::int64_t total = 0, mx = 0;
    for (std::int64_t c : counts) {
      total += c;
      mx = std::max(mx, c);
    }
    const double mean = static_cast<double>(total) / static_cast<double>(counts.size());
    const double ratio = mean > 0 ? static_cast<double>(mx) / mean : 0.0;
    layers.push_back({{"layer", l.layer}, {"imbalance", ratio}});
    if (ctx.rank == 0) {
      ctx.tel.emit(
          core::telemetry::event::kExpertLoad,
          {{"step", s}, {"layer", l.layer}, {"tokens_per_expert", counts}, {"imbalance", ratio}});
      if (ratio > cfg.expert_imbalance_threshold) {
        const auto hot = std::max_element(counts.begin(), counts.end()) - counts.begin();
        ctx.tel.emit(core::telemetry::event::kExpertImbalance,
                     {{"step", s},
                      {"layer", l.layer},
                      {"imbalance", ratio},
                      {"threshold", cfg.expert_imbalance_threshold},
                      {"expert", hot},
                      {"tokens", mx}});
        spdlog::warn("EXPERT_IMBALANCE at step {} layer {}: max/mean {:.2f} > {:.2f} (expert {})",
                     s, l.layer, ratio, cfg.expert_imbalance_threshold, hot);
      }
    }
  }
  return layers;
}

}  // namespace

core::Status start_grpo(RunContext& ctx, TrainState& st) {
  // GRPO starts from the warm-started policy as from a base model: the reference is frozen here
  // and the optimizer starts fresh.
  st.ref =
      std::make_shared<QwenModel>(ctx.spec, st.model->ops(), st.model->lm_head_weight().options(),
                                  nullptr, st.model->expert_shard(), st.model->tensor_shard());
  {
    torch::NoGradGuard ng;
    auto src = st.model->named_params();
    auto dst = st.ref->named_params();
    for (std::size_t i = 0; i < src.size(); ++i) {
      dst[i].second.copy_(src[i].second);
      dst[i].second.set_requires_grad(false);
    }
  }
  st.optim->reset();
  st.grpo_started = true;
  spdlog::info("GRPO starts at step {} (reference policy frozen, optimizer reset)", st.step);
  if (ctx.cfg.val_before_train) {
    GRPO_TRY(double val, validation_phase(ctx, st, st.step));
    ctx.tel.emit(core::telemetry::event::kValidation,
                 {{"step", st.step}, {"val_reward", val}, {"when", "grpo_start"}});
    spdlog::info("validation at GRPO start (step {}): val_reward {:.4f}", st.step, val);
  }
  return core::ok_status();
}

core::Status grpo_step(RunContext& ctx, TrainState& st, std::int64_t s, StepMetrics& m) {
  GRPO_TRY(const double reshard_s, reshard_for_rollout(ctx, st));
  Rollout r = rollout_phase(ctx, st, s, take_examples(ctx, st, ctx.cfg.train_batch_size));
  logprob_phase(ctx, st, s, r);
  MeanAccumulator acc;
  GRPO_TRY(const double update_s, update_phase(ctx, st, s, r, acc));
  st.model->set_router_bias_fault(0.0);

  // ---- metrics, reduced over ranks ----
  const Generation& g = r.generation;
  const auto rows = static_cast<double>(r.rows());
  acc.add("reward_mean", r.rewards.mean().item<double>(), rows);
  acc.add("reward_sq", r.rewards.square().mean().item<double>(), rows);
  acc.add("response_length", g.valid.sum(1).to(at::kFloat).mean().item<double>(), rows);
  GRPO_TRY(auto means, acc.reduce(*ctx.comm));
  for (const auto& [k, v] : means) {
    if (k != "reward_sq") m.fields[k] = v;
  }
  m.fields["reward_std"] =
      std::sqrt(std::max(0.0, means["reward_sq"] - means["reward_mean"] * means["reward_mean"]));
  // One rank per TP group counts its replica's tokens.
  at::Tensor tok =
      at::tensor({r.batch.valid.sum().item<std::int64_t>(), g.generated_tokens}, at::kLong) *
      ctx.counts_data();
  GRPO_TRY_STATUS(ctx.comm->allreduce_sum(tok));
  m.tokens = tok[0].item<std::int64_t>();
  m.fields["generated_tokens"] = tok[1].item<std::int64_t>();
  m.fields["rollout_s"] = r.rollout_s;
  if (ctx.cfg.measure_activation_memory) m.fields["peak_rollout_bytes"] = r.peak_rollout_bytes;
  if (st.rollout) m.fields["rollout_reshard_s"] = reshard_s;
  m.fields["old_logprob_s"] = r.old_logprob_s;
  m.fields["ref_logprob_s"] = r.ref_logprob_s;
  m.fields["update_s"] = update_s;
  if (!r.expert_load.empty()) {
    m.fields["expert_imbalance"] = expert_load_events(ctx, s, std::move(r.expert_load));
  }
  return core::ok_status();
}

}  // namespace grpo::trainer
