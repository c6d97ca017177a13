// The GRPO workload a plan is made for, named after verl's settings (docs/profile-format.md).
#pragma once

#include <cstdint>
#include <string>

namespace grpo::core {

enum class Dtype { kBf16, kFp16, kFp32 };
std::string_view to_string(Dtype d);

struct WorkloadSpec {
  std::int64_t train_batch_size = 1024;     // data.train_batch_size: prompts per step
  std::int64_t rollout_n = 5;               // actor_rollout_ref.rollout.n: responses per prompt
  std::int64_t ppo_mini_batch_size = 256;   // prompts per optimizer step
  std::int64_t max_prompt_length = 512;     // data.max_prompt_length
  std::int64_t max_response_length = 1024;  // data.max_response_length
  std::int64_t ppo_epochs = 1;
  double gpu_memory_utilization = 0.6;  // rollout.gpu_memory_utilization (vLLM)
  std::int64_t max_num_seqs = 1024;     // rollout.max_num_seqs (vLLM concurrent sequences)
  bool use_kl_loss = true;              // needs the frozen reference model
  Dtype dtype = Dtype::kBf16;           // training compute dtype
  bool fused_logprob = false;           // fused log-prob + loss kernel: no b*s*V logits buffer
  double achievable_mfu = 0.4;          // fraction of peak the cost model assumes
  double memory_headroom = 0.05;        // share of device memory the plan leaves unused

  std::int64_t seq_length() const { return max_prompt_length + max_response_length; }
  std::int64_t responses_per_step() const { return train_batch_size * rollout_n; }
};

}  // namespace grpo::core
