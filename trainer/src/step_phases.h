// The phases of a training step (internal to grpo_trainer), each a function of the run's context
// and its training state (run_context.h) that the run loop (run_loop.cpp) calls in order:
//   SFT step     sft_step.cpp      one supervised step on the answers (the warm-start)
//   GRPO step    grpo_step.cpp     start_grpo once, then per step:
//     rollout    grpo_rollout.cpp    sample a group per prompt, rewards, advantages, then the old
//                                    and reference log-probs (phases rollout, old_logprob,
//                                    ref_logprob)
//     update     grpo_update.cpp     PPO epochs x mini batches x micro batches (phase update)
//   validation   validation.cpp    mean reward on the validation split
//   micro_batches.cpp: the forward and backward passes of an update through this rank's pipeline
//   stage (1F1B, pipeline.h), and the stages' weights shared for the rollout after an update
// Every phase issues its collectives in the same order on every rank.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/trainer/grpo.h"
#include "grpo/trainer/model.h"
#include "grpo/trainer/rollout.h"
#include "grpo/trainer/tasks.h"
#include "run_context.h"

namespace grpo::trainer {

// Averages the gradients over the ranks, clips them and takes an AdamW step at `lr` (after the
// linear warm-up); skips the update when the norm is not finite. Adds grad_norm and lr to acc.
core::Status optimizer_step(RunContext& ctx, TrainState& st, double lr, MeanAccumulator& acc);

// Rows [begin, end) of a batch: one micro batch of an update.
struct MicroBatch {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

// What a stage back-propagates from after micro batch i's forward through its layers (`out`;
// the final hidden on the last stage), besides the gradient the next stage sends back: the
// weighted loss on the last stage, the stage's own weighted terms (the MoE aux loss) elsewhere;
// undefined: none. `mb` is the micro batch.
using AfterForward =
    std::function<at::Tensor(std::size_t i, const ModelOutput& out, const SequenceBatch& mb)>;

// Forward and backward of the micro batches of `batch` through this rank's pipeline stage (every
// layer without PP), in 1F1B order; gradients accumulate in the stage's parameters.
core::Status train_micro_batches(RunContext& ctx, QwenModel& model, const SequenceBatch& batch,
                                 const std::vector<MicroBatch>& micro, const AfterForward& after);

// In place: the sum of `t` over this rank's pipeline (the identity without PP). Each stage fills
// what it computed (the last stage the losses, every stage its layers' aux loss).
core::Status pipeline_sum(RunContext& ctx, at::Tensor& t);

// After an update under PP: each stage's trained parameters reach the other stages of its
// pipeline (each rank keeps every layer for the rollout, validation and checkpoints: the
// resharding from the training layout to the rollout's, PP = 1). Returns the seconds it took
// (0 without PP).
core::Result<double> share_stage_weights(RunContext& ctx, TrainState& st);

// Whether the rollout generates with the whole model on every rank (verl's hybrid engine at rollout
// TP = 1: actor_rollout_ref.rollout.tensor_model_parallel_size=1 under a TP or EP layout) rather
// than with the training layout's shards (every other rollout TP).
bool whole_model_rollout(const RunContext& ctx);
// The rollout's whole model (parameters without gradients, the training model's dtype and
// device; unfilled), for TrainState::rollout.
std::shared_ptr<QwenModel> make_rollout_model(const RunContext& ctx, const QwenModel& model);
// Before a rollout with a whole model (st.rollout, made at setup when whole_model_rollout): the
// training shards gathered into it on every rank (the resharding from the training layout to the
// rollout's). Collective. Returns the seconds it took (0 without st.rollout).
core::Result<double> reshard_for_rollout(RunContext& ctx, TrainState& st);

// One SFT step on data.sft_batch_size examples: fills sft_loss (and aux_loss), tokens, update_s.
core::Status sft_step(RunContext& ctx, TrainState& st, std::int64_t s, StepMetrics& m);

// The switch from SFT to GRPO: freezes the reference policy, resets the optimizer, and validates
// first when val_before_train is set.
core::Status start_grpo(RunContext& ctx, TrainState& st);

// One GRPO step: rollout, log-probs, update, then the metrics reduced over ranks.
core::Status grpo_step(RunContext& ctx, TrainState& st, std::int64_t s, StepMetrics& m);

// This rank's share of one GRPO step's experience, from the rollout phases.
struct Rollout {
  std::int64_t group_size = 0;           // responses per prompt (rollout.n)
  std::vector<const Example*> examples;  // one per group
  Generation generation;                 // [rows, R] responses
  at::Tensor rewards;                    // [rows] float
  at::Tensor advantages;                 // [rows] float, group-normalized
  SequenceBatch batch;                   // prompts and responses, the training layout
  at::Tensor old_logprobs;               // [rows, R] under the policy before the update
  at::Tensor ref_logprobs;               // [rows, R] under the reference (use_kl_loss only)
  std::vector<ExpertLoad> expert_load;   // from the old log-prob forward (MoE)
  double rollout_s = 0;
  // Peak CPU-allocator bytes of the generation (trainer.measure_activation_memory; 0 otherwise).
  std::int64_t peak_rollout_bytes = 0;
  double old_logprob_s = 0;
  double ref_logprob_s = 0;

  std::int64_t rows() const { return batch.rows(); }
};

// Samples rollout.n responses for each example and scores them (phase rollout).
Rollout rollout_phase(RunContext& ctx, TrainState& st, std::int64_t s,
                      std::vector<const Example*> examples);
// Old and reference log-probs of the rollout (phases old_logprob and ref_logprob).
void logprob_phase(RunContext& ctx, TrainState& st, std::int64_t s, Rollout& r);
// PPO epochs over the rollout (phase update): losses into acc, an optimizer step per mini batch.
// Returns the seconds the update took.
core::Result<double> update_phase(RunContext& ctx, TrainState& st, std::int64_t s, const Rollout& r,
                                  MeanAccumulator& acc);

// Mean reward over the validation split (greedy unless val_do_sample), reduced over ranks.
// Restores the phase it was called in.
core::Result<double> validation_phase(RunContext& ctx, TrainState& st, std::int64_t s);

}  // namespace grpo::trainer
