// What a plan tells the embedded trainer (grpo-trainer, docs/trainer-config.md): the workload's
// batch settings as `--set key=value` arguments, and which `--set` keys of grpo-launch belong to
// the trainer rather than to the planner. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/plan/planner.h"

namespace grpo::core {

// Keys under the trainer's sections (data., actor_rollout_ref., algorithm., trainer., kernels)
// go to grpo-trainer; the planner's sections (device., network., host., env., slurm., grpo.)
// and layout keys (tp, micro_batch, ...) never collide with them.
bool is_trainer_key(std::string_view key);

// "key=value" settings for grpo-trainer from the plan's workload: data.train_batch_size,
// actor_rollout_ref.rollout.n, actor_rollout_ref.rollout.max_num_seqs,
// actor_rollout_ref.actor.ppo_mini_batch_size, actor_rollout_ref.actor.ppo_epochs,
// data.max_prompt_length, data.max_response_length, actor_rollout_ref.actor.use_kl_loss,
// actor_rollout_ref.actor.megatron.dtype (the workload's dtype: float32, bfloat16 or float16),
// trainer.device (cuda on a GPU profile, cpu on a CPU one) and trainer.async_save (on a GPU profile
// only). The micro batch is not among them: the supervisor passes it (and halves it after an
// out-of-memory failure).
std::vector<std::string> trainer_settings(const Plan& plan);
// Why the embedded trainer cannot run on `cluster`'s devices; empty when it can.
std::string embedded_trainer_unsupported_device(const ClusterProfile& cluster);
// Why the embedded trainer cannot train in `workload`'s dtype (fp16); empty when it can.
std::string embedded_trainer_unsupported_dtype(const WorkloadSpec& workload);

// The value of the last `key=VALUE` of `key` among `trainer_sets` (grpo-trainer applies them in
// order: the last one wins); nullopt when the key is not set.
std::optional<std::string> last_trainer_set(const std::vector<std::string>& trainer_sets,
                                            std::string_view key);
// A whole decimal integer; nullopt for anything else (the trainer reports a bad value itself).
std::optional<std::int64_t> whole_number(std::string_view text);

// The planner's layout key ("tp", "ep", ...) for a trainer key that sets the layout
// (actor_rollout_ref.actor.megatron.tensor_model_parallel_size, ...), or empty. Such keys are set
// through the planner, which checks them, never directly.
std::string layout_key_for_trainer_key(std::string_view key);

// The plan's layout for grpo-trainer under verl's keys: actor_rollout_ref.actor.megatron.
// {tensor,pipeline,context,expert,expert_tensor}_model_parallel_size (expert_tensor_parallel_size
// for ETP), actor_rollout_ref.actor.megatron.sequence_parallel and
// actor_rollout_ref.rollout.tensor_model_parallel_size. The data-parallel size is what remains of
// the world (the supervisor may shrink it).
std::vector<std::string> trainer_layout_settings(const Layout& layout);

// Why the embedded trainer cannot run `dims` (with sequence parallelism on or off) for `model`
// (one line), or empty when it can. It runs data parallelism, expert parallelism (experts split
// evenly over EP, tokens exchanged inside the EP group) and tensor parallelism (heads, K/V heads,
// dense FFN width and vocabulary split Megatron's way: TP must divide the heads, the K/V heads,
// the FFN width of dense layers and the vocabulary; K/V replication is not built), with or
// without sequence parallelism, and TP with EP for MoE models (with sequence parallelism, as
// Megatron-Core requires; experts whole on each rank, or split over the TP group with ETP = TP)
// and pipeline parallelism (1F1B, even or uneven stages; not with tied embeddings); context
// parallelism and an ETP other than 1 or TP are not built yet.
std::string embedded_trainer_unsupported(const ParallelDims& dims, bool sequence_parallel,
                                         const ModelSpec& model);

// What the planner searches when the embedded trainer will run the plan: PP and CP are fixed at
// 1 unless the user fixed them (the embedded trainer's pipeline stages each keep every layer for
// the rollout, so PP saves no weight memory there: a user asks for it with --set pp=N); ETP is
// searched in {1, TP} as for Megatron-Core, both of which it runs.
// Sequence parallelism is the planner's choice (on with TP > 1). A user's layout choice stays,
// and embedded_trainer_unsupported then says why it cannot run. With `as_it_runs`, also the
// distributed optimizer, offload and recompute off (the trainer has none of them), so the memory
// estimate is the memory that runs; a plan that does not fit that way is made without it.
void limit_to_embedded_trainer(LayoutConstraints& constraints, bool as_it_runs);

// The world size must be a multiple of this for `dims` to stay legal when data parallelism
// shrinks: lcm(tp * cp * pp, etp * ep * pp).
int layout_world_unit(const ParallelDims& dims);

// grpo-trainer's defaults of the other batch sizes that must divide by the number of ranks.
inline constexpr std::int64_t kTrainerDefaultSftBatchSize = 64;  // trainer.sft_batch_size
inline constexpr std::int64_t kTrainerDefaultValSize = 256;      // data.val_size

// The batch sizes the world size must divide when the supervisor shrinks data parallelism:
// the plan's train and mini batch, and trainer.sft_batch_size / data.val_size as set in
// `trainer_sets` ("key=value", the last one wins) or by default.
std::vector<int> batch_divisors(const Plan& plan, const std::vector<std::string>& trainer_sets);

}  // namespace grpo::core
