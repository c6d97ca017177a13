#include "grpo/trainer/parallel.h"

#include "grpo/core/rank_map.h"

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

int ParallelState::owner_of_expert(std::int64_t e, std::int64_t experts) const {
  const std::int64_t per = experts / dims.ep;
  return first_ep_members.at(static_cast<std::size_t>(e / per));
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

core::Result<ParallelState> make_parallel_state(Communicator& world, const core::ParallelDims& dims,
                                                int local_world_size, int local_rank) {
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
  st.first_ep_members = core::group_members(map, 0, core::GroupKind::kEp);
  // Every member forms its groups in the same order: EP, then EDP.
  if (st.ep_members.size() > 1) {
    GRPO_TRY(st.ep, world.subgroup(st.ep_members, "ep" + std::to_string(st.ep_members.front())));
  }
  if (st.edp_members.size() > 1 && (dims.ep > 1 || dims.tp > 1)) {
    GRPO_TRY(st.edp,
             world.subgroup(st.edp_members, "edp" + std::to_string(st.edp_members.front())));
  }
  // Then TP and, with TP, DP (without TP the data-parallel group is the world).
  st.tp_members = core::group_members(map, rank, core::GroupKind::kTp);
  st.first_tp_members = core::group_members(map, 0, core::GroupKind::kTp);
  if (st.tp_members.size() > 1) {
    GRPO_TRY(st.tp, world.subgroup(st.tp_members, "tp" + std::to_string(st.tp_members.front())));
    const std::vector<int> dp = core::group_members(map, rank, core::GroupKind::kDp);
    if (dp.size() > 1) {
      GRPO_TRY(st.dp, world.subgroup(dp, "dp" + std::to_string(dp.front())));
    }
  }
  return st;
}

}  // namespace grpo::trainer
