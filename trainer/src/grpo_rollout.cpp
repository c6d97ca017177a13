// The rollout phases of a GRPO step: sampling a group of responses per prompt, rewards and
// group-normalized advantages, then the old and reference log-probs before any update.
#include <map>
#include <optional>

#include "allocation_peak.h"
#include "full_model.h"
#include "step_phases.h"

namespace grpo::trainer {

bool whole_model_rollout(const RunContext& ctx) {
  return ctx.cfg.rollout_tensor_model_parallel_size == 1 &&
         (ctx.par.dims.tp > 1 || ctx.par.dims.ep > 1);
}

std::shared_ptr<QwenModel> make_rollout_model(const RunContext& ctx, const QwenModel& model) {
  auto whole = std::make_shared<QwenModel>(ctx.spec, model.ops(), model.lm_head_weight().options(),
                                           /*init_gen=*/nullptr);
  for (auto& [name, p] : whole->named_params()) p.requires_grad_(false);
  return whole;
}

core::Result<double> reshard_for_rollout(RunContext& ctx, TrainState& st) {
  if (!st.rollout) return 0.0;
  torch::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, at::Tensor> dst;
  for (auto& [name, p] : st.rollout->named_params()) dst.emplace(name, p);
  GRPO_TRY_STATUS(gather_full(
      ctx, sharding_plan(ctx, *st.model).params(), st.model->named_params(),
      /*to_all=*/true, [&](const Placement& f, const at::Tensor& t) { dst.at(f.name).copy_(t); }));
  return seconds_since(t0);
}

Rollout rollout_phase(RunContext& ctx, TrainState& st, std::int64_t s,
                      std::vector<const Example*> examples) {
  const TrainerConfig& cfg = ctx.cfg;
  const std::int64_t n = cfg.rollout_n;
  Rollout r;
  r.group_size = n;
  r.examples = std::move(examples);
  ctx.enter_phase(s, "rollout");
  ctx.fire_step_faults(s, "rollout", *st.model);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<std::int64_t>> prompts;
  for (const Example* e : r.examples) {
    for (std::int64_t k = 0; k < n; ++k) prompts.push_back(ctx.data->prompt_ids(*e));
  }
  PromptBatch pb = make_prompt_batch(prompts);
  SamplingParams sp{cfg.temperature, cfg.top_p, cfg.top_k, false, ctx.data->eos_ids()};
  // Every rank of a TP group holds the same prompts and sampling stream: with the whole model each
  // generates them alone, with the shards they generate them together. At most max_num_seqs
  // sequences at a time (every rank of an EP or TP group has as many rows: as many batches).
  QwenModel& engine = st.rollout ? *st.rollout : *st.model;
  std::optional<AllocationPeak> peak;  // trainer.measure_activation_memory
  if (cfg.measure_activation_memory) peak.emplace();
  r.generation =
      generate_in_batches(engine, prompts, cfg.max_num_seqs, cfg.max_response_length, sp,
                          st.sample_gen, cfg.use_kv_cache, [&](std::int64_t steps) {
                            ctx.tel.maybe_heartbeat(s, "rollout", {{"decode_steps", steps}});
                          });
  if (peak) r.peak_rollout_bytes = peak->peak();
  peak.reset();
  const Generation& g = r.generation;
  const std::int64_t rows = pb.tokens.size(0);
  r.rewards = at::zeros({rows}, at::kFloat);
  for (std::int64_t i = 0; i < rows; ++i) {
    at::Tensor row = g.tokens[i];
    std::vector<std::int64_t> ids(row.data_ptr<std::int64_t>(),
                                  row.data_ptr<std::int64_t>() + row.numel());
    r.rewards[i] = ctx.data->reward(*r.examples[static_cast<std::size_t>(i / n)], ids);
  }
  // Every group lives on this rank (take_examples hands out whole prompts).
  TORCH_CHECK(rows % n == 0, "a group was split across ranks");
  r.advantages = group_advantages(r.rewards, n, cfg.norm_adv_by_std_in_grpo);
  r.rollout_s = seconds_since(t0);
  r.batch = make_sequence_batch(pb.tokens, pb.valid, g.tokens, g.valid);
  return r;
}

void logprob_phase(RunContext& ctx, TrainState& st, std::int64_t s, Rollout& r) {
  const TrainerConfig& cfg = ctx.cfg;
  const std::int64_t micro = cfg.ppo_micro_batch_size_per_gpu;
  ctx.enter_phase(s, "old_logprob");
  auto t0 = std::chrono::steady_clock::now();
  st.model->set_collect_expert_load(ctx.spec.is_moe());
  r.old_logprobs = sequence_logprobs(*st.model, r.batch, micro, cfg.temperature, [&](auto rows) {
    ctx.tel.maybe_heartbeat(s, "old_logprob", {{"rows", rows}});
  });
  st.model->set_collect_expert_load(false);
  r.expert_load = st.model->take_expert_load();
  r.old_logprob_s = seconds_since(t0);
  if (cfg.use_kl_loss) {
    ctx.enter_phase(s, "ref_logprob");
    t0 = std::chrono::steady_clock::now();
    r.ref_logprobs = sequence_logprobs(*st.ref, r.batch, micro, cfg.temperature, [&](auto rows) {
      ctx.tel.maybe_heartbeat(s, "ref_logprob", {{"rows", rows}});
    });
    r.ref_logprob_s = seconds_since(t0);
  }
}

}  // namespace grpo::trainer
