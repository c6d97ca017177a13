// The GRPO workload a plan is made for, named after verl's settings (docs/profile-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grpo::core {

enum class Dtype { kBf16, kFp16, kFp32 };
std::string_view to_string(Dtype d);

// How the actor turns logits into log-probs and entropy (docs/memory-model.md, "Logits").
enum class LogprobPath {
  kUnfused,         // full fp32 logits, log-softmax and entropy (verl's FSDP default)
  kChunkedEntropy,  // entropy_from_logits_with_chunking: bf16 logits, fp32 2048-row chunks
  kVocabParallel,   // Megatron: vocab-parallel log-probs/entropy over TP (verl megatron actor)
  kFused,           // fused linear + log-prob (use_fused_kernels, the trainer's kernels=fused)
};
std::string_view to_string(LogprobPath p);

// LoRA adapters (verl: actor_rollout_ref.model.lora_rank, lora_alpha, target_modules): only the
// adapters train; the base weights stay frozen in the model dtype.
struct LoraSpec {
  int rank = 0;  // 0: no LoRA
  double alpha = 0;
  // Which projections get adapters: "all-linear" or names out of q_proj k_proj v_proj o_proj
  // gate_proj up_proj down_proj (Megatron's linear_qkv linear_proj linear_fc1 linear_fc2 too).
  std::vector<std::string> targets = {"all-linear"};
  bool active() const { return rank > 0; }
};

struct WorkloadSpec {
  std::int64_t train_batch_size = 1024;     // data.train_batch_size: prompts per step
  std::int64_t rollout_n = 5;               // actor_rollout_ref.rollout.n: responses per prompt
  std::int64_t ppo_mini_batch_size = 256;   // prompts per optimizer step
  std::int64_t max_prompt_length = 512;     // data.max_prompt_length
  std::int64_t max_response_length = 1024;  // data.max_response_length
  std::int64_t ppo_epochs = 1;
  double gpu_memory_utilization = 0.6;  // rollout.gpu_memory_utilization (vLLM)
  // rollout.name == "sglang": gpu_memory_utilization is SGLang's mem_fraction_static, a share of
  // the device that already holds what was resident before the engine started
  // (docs/memory-model.md "SGLang's static memory").
  bool rollout_sglang = false;
  std::int64_t max_num_seqs = 1024;  // rollout.max_num_seqs (vLLM concurrent sequences)
  bool use_kl_loss = true;           // needs the frozen reference model
  Dtype dtype = Dtype::kBf16;        // training compute dtype
  bool fused_logprob = false;        // fused log-prob + loss kernel: no b*s*V logits buffer
  // How verl feeds the actor (docs/memory-model.md, "Tokens per micro batch"):
  bool remove_padding = true;                      // model.use_remove_padding: pack real tokens
  std::int64_t max_token_len_per_gpu = 0;          // use_dynamic_bsz: ppo_max_token_len_per_gpu
  std::int64_t logprob_max_token_len_per_gpu = 0;  // rollout.log_prob_max_token_len_per_gpu
  bool entropy_chunking = false;                   // actor.entropy_from_logits_with_chunking
  // actor.use_prefix_grouper: each prompt once, then its responses, in one row per prompt
  // (docs/memory-model.md "verl's prefix grouper"); verl uses it only without remove_padding,
  // Ulysses, fused kernels and dynamic batches.
  bool prefix_grouper = false;
  // trainer.use_legacy_worker_impl=disable: verl's model-engine worker, which moves the actor's
  // model to the host for the rollout (memory.h apply_engine_worker_offload).
  bool engine_worker = false;
  bool free_cache_engine = true;  // rollout.free_cache_engine: the engine sleeps during training
  LoraSpec lora;
  double achievable_mfu = 0.4;    // fraction of peak the cost model assumes
  double memory_headroom = 0.05;  // share of device memory the plan leaves unused

  std::int64_t seq_length() const { return max_prompt_length + max_response_length; }
  bool dynamic_batch() const { return max_token_len_per_gpu > 0; }
  std::int64_t responses_per_step() const { return train_batch_size * rollout_n; }
};

}  // namespace grpo::core
