// How a plan is shown: the "Parallel Config Summary" for people and JSON for machines
// (docs/plan-format.md, docs/rank-map.md, docs/env-contract.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "grpo/plan/env_contract.h"
#include "grpo/plan/planner.h"
#include "grpo/plan/rank_map.h"

namespace grpo::core {

// The full text report: summary, memory breakdown, step-time estimate, alternatives, rejected
// families and diagnostics. Deterministic (golden-tested).
std::string render_summary(const Plan& plan);

// "hierarchical" when some parallel group crosses nodes while TP stays inside them, "intra-node"
// when everything is inside one node.
std::string communication_pattern(const Plan& plan);

nlohmann::json rank_map_to_json(const RankMap& map);
nlohmann::json env_to_json(const EnvContract& env, const RankMap& map);
nlohmann::json layout_to_json(const Layout& layout);
// {"tp", "pp", "cp", "dp", "ep", "etp", "edp"}: the parallel sizes (part of layout_to_json).
nlohmann::json dims_to_json(const ParallelDims& dims);
nlohmann::json diagnostic_to_json(const Diagnostic& d);
// plan + estimate + rank map + env ("grpo-launch/plan/v1").
nlohmann::json plan_to_json(const Plan& plan);

}  // namespace grpo::core
