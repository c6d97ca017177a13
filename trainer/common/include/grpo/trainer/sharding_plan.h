// The sharding plan of a run (docs/parallelism.md, "The sharding plan"): for every parameter of the
// unsharded model, in the one-rank model's order, where the run's layout keeps it: the pipeline
// stage that trains it, the global rank that holds it for checkpoints, the expert it belongs to,
// and its tensor-parallel slices. It is made once per run from the unsharded model's names and
// shapes and the layout, and read by everything that needs to know where a parameter lives:
// initialisation, the optimizer's gradient groups, the pipeline's training set and weight sharing,
// checkpoint save and load, Hugging Face loading and export. The split rules (Megatron-Core's,
// below) live here and nowhere else. LibTorch-free: names and shapes only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grpo/core/model_spec.h"

namespace grpo::trainer {

// The part of a full parameter one TP rank holds: `length` entries of dimension `dim` starting
// at `offset`.
struct TpSlice {
  int dim = 0;
  std::int64_t offset = 0;
  std::int64_t length = 0;
};

// What a plan needs of the layout. The default is one rank holding everything.
struct ShardLayout {
  int tp_rank = 0;  // this rank's place in its TP group
  int tp_size = 1;
  // Expert tensor parallelism (ETP = TP): the routed experts are split like a dense MLP.
  bool expert_tp = false;
  // The decoder layers [first, second) each pipeline stage trains; empty or one entry: no PP.
  std::vector<std::pair<std::int64_t, std::int64_t>> stages;
  // Per stage, the global rank of TP rank 0 of rank 0's pipeline member (empty: rank 0).
  std::vector<int> stage_owner;
  // Under expert parallelism, per stage, the global ranks of rank 0's pipeline member's EP group:
  // member m holds experts [m * E / EP, (m + 1) * E / EP). Empty without EP.
  std::vector<std::vector<int>> stage_expert_owners;
};

// Where one parameter (or optimizer state) of the unsharded model lives.
struct Placement {
  std::string name;                 // grpo-trainer's (Hugging Face's) name
  std::vector<std::int64_t> shape;  // unsharded
  int stage = 0;                    // the pipeline stage that trains it
  // The global rank that holds it for checkpoints: rank 0's pipeline member of its stage (an
  // expert's: the rank of that member's EP group holding the expert).
  int owner = 0;
  std::int64_t expert = -1;  // the routed expert it belongs to, -1 for none
  // Split over the TP group: slices[t] is TP rank t's part, and `own` this rank's. Empty (and
  // `own` nullopt) when every rank of the group holds it whole.
  std::vector<TpSlice> slices;
  std::optional<TpSlice> own;
  // Held whole on every TP rank but, under sequence parallelism, seeing only this rank's rows
  // (the layer norms, the final norm, the router, the shared expert's gate): its gradient is
  // summed over the stage's ranks too (Megatron-Core marks these `sequence_parallel` and
  // all-reduces their gradients over TP: finalize_model_grads.py _allreduce_layernorm_grads).
  // Not the experts (summed over the expert-data-parallel group) nor q_norm/k_norm (they run
  // after the all-gather, on this rank's heads).
  bool sequence_partial = false;

  bool sliced() const { return !slices.empty(); }
  // Rank's shape: the unsharded one with this rank's slice length in the split dimension.
  std::vector<std::int64_t> own_shape() const;
};

class ShardingPlan {
 public:
  // The unsharded model's parameters (names and shapes, in its order) placed by `layout`.
  ShardingPlan(const core::ModelSpec& spec,
               const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& whole,
               const ShardLayout& layout);

  const std::vector<Placement>& params() const { return params_; }
  // AdamW's states of the parameters in AdamW::state()'s order: every exp_avg, then every
  // exp_avg_sq, placed as their parameters.
  std::vector<Placement> optimizer_states() const;
  // The placement of parameter `name`; null for a name the model does not have.
  const Placement* find(const std::string& name) const;
  // The stage that trains `name` (0 for a name the model does not have).
  int stage_of(const std::string& name) const;

 private:
  std::vector<Placement> params_;
  std::unordered_map<std::string, std::size_t> index_;
};

// Which slice of the unsharded parameter `name` rank `rank` of a TP group of `size` holds (the
// plan's split rule, Megatron-LM's: Shoeybi et al. 2019 section 3; Megatron-Core
// tensor_parallel/layers.py ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding):
// q/k/v and gate/up by output rows (heads, FFN columns), o and down by input columns, the
// embedding and the LM head by vocabulary rows; nullopt when every rank holds it whole (norms, the
// router, the shared expert's gate, the routed experts unless `expert_tp`). The shared expert is
// split like a dense MLP (Megatron-Core's SharedExpertMLP), and so are the routed experts with
// `expert_tp`. K/V heads are split when there are at least `size` of them, else each rank holds
// one, replicated (rank r holds head r / (size / kv)), as Megatron-Core does when TP exceeds the
// query groups. `name` may carry a prefix such as "exp_avg.". core::embedded_trainer_unsupported
// says which sizes split a model.
std::optional<TpSlice> tp_slice(const core::ModelSpec& spec, const std::string& name, int rank,
                                int size, bool expert_tp);

// Whether a parameter (or optimizer state) name is one of an MoE layer's routed experts
// ("....mlp.experts.5.up_proj.weight"); returns the expert's index, or -1.
std::int64_t expert_index(const std::string& name);

}  // namespace grpo::trainer
