#include "grpo/core/trainer_args.h"

#include <array>
#include <charconv>

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
