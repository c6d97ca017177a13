#include "grpo/core/trainer_args.h"

#include <array>
#include <charconv>
#include <numeric>

namespace grpo::core {

bool is_trainer_key(std::string_view key) {
  constexpr std::array<std::string_view, 4> kSections = {"data.", "actor_rollout_ref.",
                                                         "algorithm.", "trainer."};
  for (auto s : kSections) {
    if (key.rfind(s, 0) == 0) return true;
  }
  return key == "kernels";
}

std::vector<std::string> trainer_settings(const Plan& plan) {
  const WorkloadSpec& w = plan.workload;
  return {
      "data.train_batch_size=" + std::to_string(w.train_batch_size),
      "actor_rollout_ref.rollout.n=" + std::to_string(w.rollout_n),
      "actor_rollout_ref.actor.ppo_mini_batch_size=" + std::to_string(w.ppo_mini_batch_size),
      "actor_rollout_ref.actor.ppo_epochs=" + std::to_string(w.ppo_epochs),
      "data.max_prompt_length=" + std::to_string(w.max_prompt_length),
      "data.max_response_length=" + std::to_string(w.max_response_length),
      std::string("actor_rollout_ref.actor.use_kl_loss=") + (w.use_kl_loss ? "true" : "false"),
  };
}

std::vector<std::string> trainer_layout_settings(const Layout& layout) {
  const ParallelDims& d = layout.dims;
  const std::string m = "actor_rollout_ref.actor.megatron.";
  return {
      m + "tensor_model_parallel_size=" + std::to_string(d.tp),
      m + "pipeline_model_parallel_size=" + std::to_string(d.pp),
      m + "context_parallel_size=" + std::to_string(d.cp),
      m + "expert_model_parallel_size=" + std::to_string(d.ep),
      m + "expert_tensor_parallel_size=" + std::to_string(d.etp),
      m + "sequence_parallel=" + (layout.sequence_parallel ? "true" : "false"),
      "actor_rollout_ref.rollout.tensor_model_parallel_size=" + std::to_string(layout.rollout_tp),
  };
}

std::string embedded_trainer_unsupported(const ParallelDims& d, const ModelSpec& model) {
  std::string missing;
  auto need = [&](int v, const char* name) {
    if (v > 1)
      missing += (missing.empty() ? "" : ", ") + std::string(name) + "=" + std::to_string(v);
  };
  need(d.tp, "TP");
  need(d.pp, "PP");
  need(d.cp, "CP");
  need(d.etp, "ETP");
  if (!missing.empty()) {
    return "the embedded trainer runs data and expert parallelism only; this layout needs " +
           missing + " (set them to 1, or run your own trainer with --trainer-cmd)";
  }
  if (d.ep > 1 && !model.is_moe()) {
    return "EP=" + std::to_string(d.ep) + " needs a mixture-of-experts model; " + model.name +
           " is dense";
  }
  if (d.ep > 1 && model.num_experts % d.ep != 0) {
    return "EP=" + std::to_string(d.ep) + " does not divide the " +
           std::to_string(model.num_experts) + " experts of " + model.name;
  }
  return {};
}

int layout_world_unit(const ParallelDims& d) {
  return std::lcm(d.tp * d.cp * d.pp, d.etp * d.ep * d.pp);
}

std::vector<int> batch_divisors(const Plan& plan, const std::vector<std::string>& trainer_sets) {
  std::int64_t train = plan.workload.train_batch_size;
  std::int64_t mini = plan.workload.ppo_mini_batch_size;
  std::int64_t sft = kTrainerDefaultSftBatchSize;
  std::int64_t val = kTrainerDefaultValSize;
  for (const auto& kv : trainer_sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    std::int64_t v = 0;
    const char* first = kv.data() + eq + 1;
    const char* last = kv.data() + kv.size();
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || end != last) continue;  // the trainer reports a bad value itself
    if (key == "data.train_batch_size") train = v;
    if (key == "actor_rollout_ref.actor.ppo_mini_batch_size") mini = v;
    if (key == "trainer.sft_batch_size") sft = v;
    if (key == "data.val_size") val = v;
  }
  return {static_cast<int>(train), static_cast<int>(mini), static_cast<int>(sft),
          static_cast<int>(val)};
}

}  // namespace grpo::core
