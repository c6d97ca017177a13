#include "grpo/trainer/parallel.h"

#include "grpo/plan/layout.h"
#include "grpo/plan/rank_map.h"

namespace grpo::trainer {
using core::ErrorKind;
using core::make_error;

std::pair<std::int64_t, std::int64_t> ParallelState::local_experts(std::int64_t experts) const {
  const std::int64_t per = experts / dims.ep;
  return {coords.ep * per, (coords.ep + 1) * per};
}

TensorShard ParallelState::tensor_shard() const {
  return tp ? TensorShard{coords.tp, dims.tp, tp.get(), sequence_parallel} : TensorShard{};
}

ShardLayout ParallelState::shard_layout() const {
  ShardLayout l;
  l.tp_rank = coords.tp;
  l.tp_size = dims.tp;
  l.expert_tp = expert_tp();
  l.stages = stages;
  for (const std::vector<int>& members : stage_tp_members) l.stage_owner.push_back(members.front());
  if (ep) l.stage_expert_owners = stage_ep_members;
  return l;
}

core::Result<std::vector<std::pair<std::int64_t, std::int64_t>>> pipeline_stages(
    const TrainerConfig& cfg, std::int64_t num_layers) {
  core::ModelSpec spec;
  spec.num_layers = num_layers;
  core::Layout layout;
  layout.dims.pp = static_cast<int>(cfg.pipeline_model_parallel_size);
  layout.first_stage_layers = static_cast<int>(cfg.first_pipeline_stage_layers);
  layout.last_stage_layers = static_cast<int>(cfg.last_pipeline_stage_layers);
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  std::int64_t begin = 0;
  bool ok = true;
  for (int n : core::stage_layers(spec, layout)) {
    ok = ok && n >= 1;
    out.emplace_back(begin, begin + n);
    begin += n;
  }
  if (!ok || begin != num_layers) {
    return make_error(ErrorKind::kInvalidValue,
                      "PP=" + std::to_string(layout.dims.pp) + " with first/last stage layers " +
                          std::to_string(layout.first_stage_layers) + "/" +
                          std::to_string(layout.last_stage_layers) + " does not split the " +
                          std::to_string(num_layers) +
                          " layers (Megatron-Core's rule: the other stages share the rest evenly, "
                          "at least one layer each)");
  }
  return out;
}

std::string ParallelState::describe() const {
  const core::ParallelDims& d = dims;
  return "TP=" + std::to_string(d.tp) + " PP=" + std::to_string(d.pp) +
         " CP=" + std::to_string(d.cp) + " DP=" + std::to_string(d.dp) +
         " EP=" + std::to_string(d.ep) + " ETP=" + std::to_string(d.etp) +
         " EDP=" + std::to_string(d.edp());
}

core::ParallelDims dims_from_config(const TrainerConfig& cfg, int world_size) {
  core::ParallelDims d;
  d.tp = static_cast<int>(cfg.tensor_model_parallel_size);
  d.pp = static_cast<int>(cfg.pipeline_model_parallel_size);
  d.cp = static_cast<int>(cfg.context_parallel_size);
  d.ep = static_cast<int>(cfg.expert_model_parallel_size);
  d.etp = static_cast<int>(cfg.expert_tensor_parallel_size);
  d.dp = world_size / (d.tp * d.pp * d.cp);
  return d;
}

core::Result<ParallelState> make_parallel_state(
    Communicator& world, const core::ParallelDims& dims, int local_world_size, int local_rank,
    std::vector<std::pair<std::int64_t, std::int64_t>> stages) {
  const int size = world.world_size();
  const int rank = world.rank();
  if (local_world_size < 1 || size % local_world_size != 0) {
    return make_error(ErrorKind::kInvalidValue,
                      std::to_string(size) + " ranks do not fill nodes of " +
                          std::to_string(local_world_size) + " ranks each");
  }
  if (dims.world_size() != size) {
    return make_error(ErrorKind::kInvalidValue, "the layout needs " +
                                                    std::to_string(dims.world_size()) + " ranks; " +
                                                    std::to_string(size) + " started");
  }
  const core::RankMap map = core::build_rank_map(size / local_world_size, local_world_size, dims);
  ParallelState st;
  st.dims = dims;
  st.coords = map.ranks.at(static_cast<std::size_t>(rank));
  if (st.coords.local_rank != local_rank) {
    return make_error(
        ErrorKind::kInvalidValue,
        "rank " + std::to_string(rank) + " runs as local rank " + std::to_string(local_rank) +
            " but the rank map places it at local rank " + std::to_string(st.coords.local_rank) +
            " of node " + std::to_string(st.coords.node_rank) +
            " (ranks must be placed node by node, in order)");
  }
  st.ep_members = core::group_members(map, rank, core::GroupKind::kEp);
  st.edp_members = core::group_members(map, rank, core::GroupKind::kEdp);
  st.stages = std::move(stages);
  for (int pipeline_rank : core::group_members(map, 0, core::GroupKind::kPp)) {
    st.stage_tp_members.push_back(core::group_members(map, pipeline_rank, core::GroupKind::kTp));
    st.stage_ep_members.push_back(core::group_members(map, pipeline_rank, core::GroupKind::kEp));
  }
  // Every member forms its groups in the same order: EP, then EDP.
  if (st.ep_members.size() > 1) {
    GRPO_TRY(st.ep, world.subgroup(st.ep_members, "ep" + std::to_string(st.ep_members.front())));
  }
  if (st.edp_members.size() > 1 && (dims.ep > 1 || dims.tp > 1 || dims.pp > 1)) {
    GRPO_TRY(st.edp,
             world.subgroup(st.edp_members, "edp" + std::to_string(st.edp_members.front())));
  }
  // Then TP; with TP or PP, DP (without either the data-parallel group is the world); then PP.
  st.tp_members = core::group_members(map, rank, core::GroupKind::kTp);
  if (st.tp_members.size() > 1) {
    GRPO_TRY(st.tp, world.subgroup(st.tp_members, "tp" + std::to_string(st.tp_members.front())));
  }
  if (dims.tp > 1 || dims.pp > 1) {
    const std::vector<int> dp = core::group_members(map, rank, core::GroupKind::kDp);
    if (dp.size() > 1) {
      GRPO_TRY(st.dp, world.subgroup(dp, "dp" + std::to_string(dp.front())));
    }
  }
  if (dims.pp > 1) {
    const std::vector<int> pp = core::group_members(map, rank, core::GroupKind::kPp);
    GRPO_TRY(st.pp, world.subgroup(pp, "pp" + std::to_string(pp.front())));
  }
  if (dims.pp > 1 && dims.tp > 1) {
    std::vector<int> stage;
    for (std::size_t r = 0; r < map.ranks.size(); ++r) {
      if (map.ranks[r].pp == st.coords.pp) stage.push_back(static_cast<int>(r));
    }
    GRPO_TRY(st.stage_ranks, world.subgroup(stage, "stage" + std::to_string(stage.front())));
  }
  return st;
}

}  // namespace grpo::trainer
