// The rank map: every global rank -> node, local rank, device and its parallel coordinates
// (glossary.h). Rank order is Megatron-Core's default (tp fastest, then cp, dp, pp; the expert
// view etp, ep, edp, pp), ranks are placed node by node, so TP groups never cross a node when TP
// divides the ranks per node. The JSON form is specified in docs/rank-map.md.
#pragma once

#include <vector>

#include "grpo/core/glossary.h"

namespace grpo::core {

struct RankMap {
  int nodes = 0;
  int ranks_per_node = 0;
  ParallelDims dims;
  std::vector<RankCoords> ranks;  // index = global_rank
  int world_size() const { return static_cast<int>(ranks.size()); }
};

// Requires dims.world_size() == nodes * ranks_per_node (the planner guarantees it).
RankMap build_rank_map(int nodes, int ranks_per_node, const ParallelDims& dims);

// True when every TP (and ETP) group lies inside one node.
bool tp_groups_within_nodes(const RankMap& map);

// The process groups of Megatron-Core's two views of the ranks: the dense view (tp, cp, dp, pp)
// and the expert view (etp, ep, edp, pp). A group holds the ranks that differ from `rank` only in
// that one coordinate.
enum class GroupKind { kTp, kCp, kDp, kPp, kEtp, kEp, kEdp };

// The global ranks of `rank`'s group of `kind`, ascending: a rank's index in the list is its rank
// inside the group (its coordinate of that kind).
std::vector<int> group_members(const RankMap& map, int rank, GroupKind kind);

}  // namespace grpo::core
