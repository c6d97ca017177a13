// The layout a rank runs: its coordinates in the plan's rank map (core::build_rank_map, the same
// code the planner uses, Megatron-Core's rank order) and the process groups built from them.
// The embedded trainer runs data, tensor and expert parallelism (core::embedded_trainer_unsupported
// says what else it refuses).
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
#include "grpo/trainer/tensor_parallel.h"

namespace grpo::trainer {

struct ParallelState {
  core::ParallelDims dims;
  core::RankCoords coords;
  std::vector<int> ep_members;        // global ranks of this rank's EP group
  std::vector<int> edp_members;       // global ranks holding the same experts
  std::vector<int> first_ep_members;  // rank 0's EP group: where a checkpoint's experts come from
  std::unique_ptr<Communicator> ep;   // null when EP = 1
  std::unique_ptr<Communicator> edp;  // null when this rank's experts have no replica
  std::vector<int> tp_members;        // global ranks of this rank's TP group
  std::vector<int> first_tp_members;  // rank 0's TP group: where a checkpoint's slices come from
  std::unique_ptr<Communicator> tp;   // null when TP = 1
  std::unique_ptr<Communicator> dp;   // the ranks holding the same slices; null unless TP > 1
  bool sequence_parallel = false;     // the plan's sequence_parallel (with TP > 1)

  int ep_size() const { return dims.ep; }
  // This rank's tensor shard (TP rank, size, group); the default without TP.
  TensorShard tensor_shard() const;
  // The data-parallel replica this rank belongs to and how many there are: the ranks of one TP
  // group see the same data and draw the same samples.
  int data_rank() const { return coords.dp; }
  int data_ranks() const { return dims.dp; }
  // This rank's experts [first, second) of a model with `experts` experts.
  std::pair<std::int64_t, std::int64_t> local_experts(std::int64_t experts) const;
  // The global rank in rank 0's EP group that holds expert `e`.
  int owner_of_expert(std::int64_t e, std::int64_t experts) const;
  // One line: "TP=1 PP=1 CP=1 DP=2 EP=2 ETP=1 EDP=1".
  std::string describe() const;
};

// The plan's layout from the trainer's settings for a world of `world_size` ranks (DP is what
// remains). Assumes validate_for_world passed.
core::ParallelDims dims_from_config(const TrainerConfig& cfg, int world_size);

// Builds the rank map for `world_size` ranks placed `local_world_size` per node, checks that this
// process's identity (global `rank`, `local_rank`) is the map's, and forms the EP and EDP groups
// over `world` (collective among each group's members; EDP also with TP > 1 and EP = 1, where
// sequence parallelism gives every rank its own tokens for the experts). Errors: kInvalidValue
// (identity or placement mismatch), kUnavailable (a group failed to form).
core::Result<ParallelState> make_parallel_state(Communicator& world, const core::ParallelDims& dims,
                                                int local_world_size, int local_rank);

}  // namespace grpo::trainer
