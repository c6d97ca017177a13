// The planner: search the layout space for GRPO training of a model on a cluster, keep the
// legal layouts that fit in every phase, rank them with the cost model, and explain the winner,
// the runners-up and why each rejected family was rejected. Pure: values in, a Plan out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grpo/core/catalog.h"
#include "grpo/core/cluster_profile.h"
#include "grpo/core/diagnostic.h"
#include "grpo/core/engine_versions.h"
#include "grpo/core/model_spec.h"
#include "grpo/plan/cost.h"
#include "grpo/plan/env_contract.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/memory.h"
#include "grpo/plan/rank_map.h"

namespace grpo::core {

struct Candidate {
  Layout layout;
  MemoryEstimate memory;
  CostEstimate cost;
};

// One line per rejected family ("TP=1", "PP=4", "EP=2"): the best attempt's failure.
struct Rejection {
  std::string family;
  DiagCode code = DiagCode::kOomRisk;
  std::string reason;
};

struct SearchStats {
  std::int64_t structural = 0;  // (tp, pp, cp, ep, etp) combinations examined
  std::int64_t legal = 0;       // of which legal
  std::int64_t evaluated = 0;   // full candidates (with micro batch, offload, recompute) estimated
  std::int64_t fitting = 0;     // of which fit in memory
};

struct PlanRequest {
  ModelSpec model;
  ClusterProfile cluster;
  LayoutConstraints constraints;
  EngineVersions engines;  // whose rules decide legality (--engines)
  int alternatives = 3;
};

struct Plan {
  ModelSpec model;
  ClusterProfile cluster;
  WorkloadSpec workload;
  LayoutConstraints constraints;
  EngineVersions engines;
  bool feasible = false;
  Candidate best;                       // valid when feasible
  std::vector<Candidate> alternatives;  // next best, one per other structural family
  std::vector<Rejection> rejections;
  std::vector<Diagnostic> diagnostics;  // errors when infeasible; warnings / info otherwise
  RankMap rank_map;                     // of the best layout (empty when infeasible)
  EnvContract env;                      // of the best layout (empty when infeasible)
  SearchStats stats;
};

Plan make_plan(const PlanRequest& request);

// True when the plan can be run: feasible and no error diagnostics.
bool plan_ok(const Plan& plan);

// Splits --set overrides into layout constraints and profile overrides.
Status split_layout_overrides(const std::vector<Override>& all, LayoutConstraints& layout,
                              std::vector<Override>& profile);

// The cheapest change that would make `candidate` fit, as a hint ("enable optimizer offload").
std::string cheapest_fix(const Candidate& candidate, const ClusterProfile& cluster);

}  // namespace grpo::core
