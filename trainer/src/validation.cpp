// Validation: the mean reward of the validation split, each rank generating for its share.
#include <algorithm>

#include "step_phases.h"

namespace grpo::trainer {

core::Result<double> validation_phase(RunContext& ctx, TrainState& st, std::int64_t s) {
  const TrainerConfig& cfg = ctx.cfg;
  const std::vector<Example>& val = ctx.data->val();
  const std::string saved_phase = ctx.phase;
  ctx.enter_phase(s, "validation");
  const auto per_rank = static_cast<std::int64_t>(val.size()) / ctx.par.data_ranks();
  double sum = 0;
  SamplingParams sp;
  sp.greedy = !cfg.val_do_sample;
  sp.temperature = cfg.temperature;
  sp.top_p = cfg.top_p;
  sp.top_k = cfg.top_k;
  sp.eos_ids = ctx.data->eos_ids();
  std::vector<std::vector<std::int64_t>> prompts;
  for (std::int64_t i = 0; i < per_rank; ++i) {
    prompts.push_back(
        ctx.data->prompt_ids(val[static_cast<std::size_t>(ctx.par.data_rank() * per_rank + i)]));
  }
  const Generation g = generate_in_batches(
      *st.model, prompts, cfg.max_num_seqs, cfg.max_response_length, sp, st.sample_gen,
      cfg.use_kv_cache, [&](std::int64_t) { ctx.tel.maybe_heartbeat(s, "validation"); });
  for (std::int64_t i = 0; i < per_rank; ++i) {
    at::Tensor row = g.tokens[i];
    std::vector<std::int64_t> ids(row.data_ptr<std::int64_t>(),
                                  row.data_ptr<std::int64_t>() + row.numel());
    const Example& ex = val[static_cast<std::size_t>(ctx.par.data_rank() * per_rank + i)];
    sum += ctx.data->reward(ex, ids);
  }
  at::Tensor t = at::tensor({sum, static_cast<double>(per_rank)}, at::kDouble);
  GRPO_TRY_STATUS(ctx.comm->allreduce_sum(t));
  ctx.phase = saved_phase;
  return t[0].item<double>() / std::max(1.0, t[1].item<double>());
}

}  // namespace grpo::trainer
