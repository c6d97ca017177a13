// The environment every rank of a run sees (docs/env-contract.md): job-wide variables derived
// from the profile and the plan (NCCL / HCCL / OMP settings), per-node variables, and per-rank
// variables (the torchrun contract). Profile settings that contradict the plan are reported as
// ENV_CONFLICT diagnostics.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/cluster_profile.h"
#include "grpo/core/diagnostic.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/rank_map.h"

namespace grpo::core {

using EnvMap = std::map<std::string, std::string>;

struct EnvContract {
  EnvMap job;                // identical on every rank
  std::vector<EnvMap> node;  // index = node_rank; variables that differ by node (may be empty maps)
  std::vector<Diagnostic> diagnostics;
};

// Variables set per rank by whoever starts the rank (the local runner or the PMIx bootstrap):
// RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK.
const std::vector<std::string>& per_rank_variables();

EnvContract build_env(const ClusterProfile& cluster, const Layout& layout);

// The full environment of one rank: job + its node's + its per-rank variables.
EnvMap rank_env(const EnvContract& env, const RankMap& map, int global_rank);

}  // namespace grpo::core
