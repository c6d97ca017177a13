// What `grpo-launch supervise` needs to start a run's job step, as written by `submit` into the
// run directory (run.json, schema "grpo-launch/run/v1", docs/sbatch-template.md), and the readers
// of the run directory's env.json and rankmap.json. The step itself: job_step.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/plan/env_contract.h"

namespace grpo::core {

struct RunSpec {
  std::string run_id;                        // the run directory's name
  std::string created_utc;                   // "2026-11-29T20:45:00Z"
  std::string profile;                       // cluster profile name
  std::string model;                         // model name
  std::string version;                       // grpo-launch version that wrote it
  int nodes = 0;                             // = rankmap.json nodes
  int ranks_per_node = 0;                    // = rankmap.json ranks_per_node
  int cpus_per_task = 0;                     // 0: not given to srun
  std::vector<std::string> trainer_command;  // argv, run by srun without a shell
  std::vector<std::string> exclude;          // nodes srun must not use (every attempt's step)
  int world_size() const { return nodes * ranks_per_node; }
};

nlohmann::json run_spec_to_json(const RunSpec& spec);
// Validates the schema tag, every field's type and range (nodes, ranks_per_node >= 1, a
// non-empty trainer_command of strings without NUL). Errors: kMissingKey, kWrongType,
// kInvalidValue, with `file` as location.
Result<RunSpec> run_spec_from_json(const nlohmann::json& j, std::string_view file);

// The "job" block of env.json (every value a string, every name an identifier).
Result<EnvMap> job_env_from_json(const nlohmann::json& env_json, std::string_view file);

// nodes and ranks_per_node of rankmap.json (checked against its "ranks" array length).
struct RankMapShape {
  int nodes = 0;
  int ranks_per_node = 0;
};
Result<RankMapShape> rank_map_shape_from_json(const nlohmann::json& j, std::string_view file);

}  // namespace grpo::core
