// The layout a rank runs: its coordinates in the plan's rank map (core::build_rank_map, the same
// code the planner uses, Megatron-Core's rank order) and the process groups built from them.
// The embedded trainer runs data, tensor, pipeline and expert parallelism
// (core::embedded_trainer_unsupported says what else it refuses).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grpo/core/glossary.h"
#include "grpo/core/result.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/config.h"
#include "grpo/trainer/sharding_plan.h"
#include "grpo/trainer/tensor_parallel.h"

namespace grpo::trainer {

struct ParallelState {
  core::ParallelDims dims;
  core::RankCoords coords;
  std::vector<int> ep_members;        // global ranks of this rank's EP group
  std::vector<int> edp_members;       // global ranks holding the same experts
  std::unique_ptr<Communicator> ep;   // null when EP = 1
  std::unique_ptr<Communicator> edp;  // null when this rank's experts have no replica
  std::vector<int> tp_members;        // global ranks of this rank's TP group
  std::unique_ptr<Communicator> tp;   // null when TP = 1
  // The ranks holding the same slices of the same stage; null unless TP > 1 or PP > 1 (the world
  // is the data-parallel group then).
  std::unique_ptr<Communicator> dp;
  bool sequence_parallel = false;  // the plan's sequence_parallel (with TP > 1)
  // Pipeline parallelism: this rank's pipeline (its rank in the group is its stage), null when
  // PP = 1, and the decoder layers [first, second) each stage trains.
  std::unique_ptr<Communicator> pp;
  // The ranks of this rank's stage (TP x DP), where sequence parallelism's replicated parameters
  // sum their gradients; null unless PP > 1 and TP > 1 (the world then).
  std::unique_ptr<Communicator> stage_ranks;
  std::vector<std::pair<std::int64_t, std::int64_t>> stages;
  // Where a checkpoint's tensors of stage k come from: the TP and EP groups of rank 0's pipeline
  // member at stage k ([0] is rank 0's own).
  std::vector<std::vector<int>> stage_tp_members;
  std::vector<std::vector<int>> stage_ep_members;

  int ep_size() const { return dims.ep; }
  // Expert tensor parallelism (ETP = TP): the experts are split over the TP group like a dense MLP.
  bool expert_tp() const { return dims.etp > 1; }
  // This rank's tensor shard (TP rank, size, group); the default without TP.
  TensorShard tensor_shard() const;
  // The data-parallel replica this rank belongs to and how many there are: the ranks of one TP
  // group see the same data and draw the same samples.
  int data_rank() const { return coords.dp; }
  int data_ranks() const { return dims.dp; }
  // This rank's experts [first, second) of a model with `experts` experts.
  std::pair<std::int64_t, std::int64_t> local_experts(std::int64_t experts) const;
  int stage() const { return coords.pp; }
  bool first_stage() const { return coords.pp == 0; }
  bool last_stage() const { return coords.pp == dims.pp - 1; }
  // What the run's sharding plan (sharding_plan.h) needs of this layout: TP coordinates, the
  // stages' layers, and which ranks hold each stage's (and each expert's) tensors for checkpoints.
  ShardLayout shard_layout() const;
  // One line: "TP=1 PP=1 CP=1 DP=2 EP=2 ETP=1 EDP=1".
  std::string describe() const;
};

// The plan's layout from the trainer's settings for a world of `world_size` ranks (DP is what
// remains). Assumes validate_for_world passed.
core::ParallelDims dims_from_config(const TrainerConfig& cfg, int world_size);

// The decoder layers [first, second) of each of the `pp` stages of a `num_layers`-layer model,
// split as the planner splits them (core::stage_layers: even, or the configured first/last stage
// counts; one stage [0, num_layers) without PP). Errors: kInvalidValue when that split leaves a
// stage without layers or does not add up.
core::Result<std::vector<std::pair<std::int64_t, std::int64_t>>> pipeline_stages(
    const TrainerConfig& cfg, std::int64_t num_layers);

// Builds the rank map for `world_size` ranks placed `local_world_size` per node, checks that this
// process's identity (global `rank`, `local_rank`) is the map's, and forms the EP, EDP, TP, DP and
// PP groups
// over `world` (collective among each group's members; EDP also with TP > 1 and EP = 1, where
// sequence parallelism gives every rank its own tokens for the experts). Errors: kInvalidValue
// (identity or placement mismatch), kUnavailable (a group failed to form).
core::Result<ParallelState> make_parallel_state(
    Communicator& world, const core::ParallelDims& dims, int local_world_size, int local_rank,
    std::vector<std::pair<std::int64_t, std::int64_t>> stages);

}  // namespace grpo::trainer
