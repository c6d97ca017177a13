#include "grpo/plan/rank_map.h"

namespace grpo::core {

RankMap build_rank_map(int nodes, int ranks_per_node, const ParallelDims& d) {
  RankMap map;
  map.nodes = nodes;
  map.ranks_per_node = ranks_per_node;
  map.dims = d;
  const int world = nodes * ranks_per_node;
  const int edp = d.edp() > 0 ? d.edp() : 1;
  map.ranks.reserve(static_cast<std::size_t>(world));
  for (int g = 0; g < world; ++g) {
    RankCoords r;
    r.global_rank = g;
    r.node_rank = g / ranks_per_node;
    r.local_rank = g % ranks_per_node;
    r.device = r.local_rank;
    r.tp = g % d.tp;
    r.cp = (g / d.tp) % d.cp;
    r.dp = (g / (d.tp * d.cp)) % d.dp;
    r.pp = g / (d.tp * d.cp * d.dp);
    r.etp = g % d.etp;
    r.ep = (g / d.etp) % d.ep;
    r.edp = (g / (d.etp * d.ep)) % edp;
    map.ranks.push_back(r);
  }
  return map;
}

bool tp_groups_within_nodes(const RankMap& map) {
  for (const auto& r : map.ranks) {
    const int tp_first = r.global_rank - r.tp;
    const int etp_first = r.global_rank - r.etp;
    if (tp_first / map.ranks_per_node != r.node_rank) return false;
    if (etp_first / map.ranks_per_node != r.node_rank) return false;
  }
  return true;
}

std::vector<int> group_members(const RankMap& map, int rank, GroupKind kind) {
  const RankCoords& me = map.ranks.at(static_cast<std::size_t>(rank));
  auto same = [&](const RankCoords& r) {
    switch (kind) {
      case GroupKind::kTp:
        return r.cp == me.cp && r.dp == me.dp && r.pp == me.pp;
      case GroupKind::kCp:
        return r.tp == me.tp && r.dp == me.dp && r.pp == me.pp;
      case GroupKind::kDp:
        return r.tp == me.tp && r.cp == me.cp && r.pp == me.pp;
      case GroupKind::kPp:
        return r.tp == me.tp && r.cp == me.cp && r.dp == me.dp;
      case GroupKind::kEtp:
        return r.ep == me.ep && r.edp == me.edp && r.pp == me.pp;
      case GroupKind::kEp:
        return r.etp == me.etp && r.edp == me.edp && r.pp == me.pp;
      case GroupKind::kEdp:
        return r.etp == me.etp && r.ep == me.ep && r.pp == me.pp;
    }
    return false;
  };
  std::vector<int> out;
  for (const RankCoords& r : map.ranks) {
    if (same(r)) out.push_back(r.global_rank);
  }
  return out;
}

}  // namespace grpo::core
