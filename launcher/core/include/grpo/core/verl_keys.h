// The verl keys both sides of grpo-launch spell (issue 33: "each contract defined once"): the
// planner hands grpo-trainer its layout and workload through them (trainer_args.h), grpo-trainer
// reads them (trainer/common/src/config.cpp key_defs), `check` reads them from verl scripts
// (checker_run.h), and the supervisor names the one it lowers after an OOM. Each is spelled here
// only; VerlKeyContract.KeysAreSpelledOnlyHere (tests/unit/verl_keys_test.cpp) fails on one
// written as a literal anywhere else in launcher/ or trainer/. The names are verl's (verl/trainer/
// config/*.yaml); trainer.sft_batch_size, trainer.sft_warmup_steps, trainer.device and the
// other grpo-trainer extensions are documented in docs/trainer-config.md.
#pragma once

#include <string>
#include <string_view>

namespace grpo::core::verl_key {

// data.*
inline constexpr const char* kTrainBatchSize = "data.train_batch_size";
inline constexpr const char* kMaxPromptLength = "data.max_prompt_length";
inline constexpr const char* kMaxResponseLength = "data.max_response_length";
inline constexpr const char* kValSize = "data.val_size";

// actor_rollout_ref.actor.*
inline constexpr const char* kMiniBatch = "actor_rollout_ref.actor.ppo_mini_batch_size";
inline constexpr const char* kMicroBatch = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu";
inline constexpr const char* kPpoEpochs = "actor_rollout_ref.actor.ppo_epochs";
inline constexpr const char* kUseKlLoss = "actor_rollout_ref.actor.use_kl_loss";
inline constexpr const char* kStrategy = "actor_rollout_ref.actor.strategy";

// actor_rollout_ref.actor.megatron.*: the actor's layout.
inline constexpr const char* kTp = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size";
inline constexpr const char* kPp = "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size";
inline constexpr const char* kCp = "actor_rollout_ref.actor.megatron.context_parallel_size";
inline constexpr const char* kEp = "actor_rollout_ref.actor.megatron.expert_model_parallel_size";
inline constexpr const char* kEtp = "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size";
inline constexpr const char* kSequenceParallel =
    "actor_rollout_ref.actor.megatron.sequence_parallel";
inline constexpr const char* kMegatronDtype = "actor_rollout_ref.actor.megatron.dtype";
// Megatron's TransformerConfig fields verl passes through; the uneven pipeline split.
inline constexpr const char* kTransformerConfig =
    "actor_rollout_ref.actor.megatron.override_transformer_config.";
inline constexpr const char* kFirstStageLayers =
    "actor_rollout_ref.actor.megatron.override_transformer_config."
    "num_layers_in_first_pipeline_stage";
inline constexpr const char* kLastStageLayers =
    "actor_rollout_ref.actor.megatron.override_transformer_config."
    "num_layers_in_last_pipeline_stage";

// actor_rollout_ref.rollout.* and .model.*
inline constexpr const char* kRolloutN = "actor_rollout_ref.rollout.n";
inline constexpr const char* kRolloutTp = "actor_rollout_ref.rollout.tensor_model_parallel_size";
inline constexpr const char* kRolloutMaxNumSeqs = "actor_rollout_ref.rollout.max_num_seqs";
inline constexpr const char* kModelPath = "actor_rollout_ref.model.path";

// trainer.*
inline constexpr const char* kNnodes = "trainer.nnodes";
inline constexpr const char* kGpusPerNode = "trainer.n_gpus_per_node";
inline constexpr const char* kTotalTrainingSteps = "trainer.total_training_steps";
inline constexpr const char* kSaveFreq = "trainer.save_freq";
inline constexpr const char* kLogger = "trainer.logger";
inline constexpr const char* kSftWarmupSteps = "trainer.sft_warmup_steps";  // grpo-trainer's
inline constexpr const char* kSftBatchSize = "trainer.sft_batch_size";      // grpo-trainer's
inline constexpr const char* kDevice = "trainer.device";                    // grpo-trainer's
inline constexpr const char* kAsyncSave = "trainer.async_save";             // grpo-trainer's

// One Hydra override as verl's command line takes it: "key=value".
inline std::string setting(std::string_view key, std::string_view value) {
  std::string out(key);
  out += '=';
  out += value;
  return out;
}

}  // namespace grpo::core::verl_key
