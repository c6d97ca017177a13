// What `grpo-launch supervise` needs to start a run's job step, as written by `submit` into the
// run directory (run.json, schema "grpo-launch/run/v1", docs/sbatch-template.md), and the pure
// parts of the step: checking the allocation against the rank map, the srun command line, and
// the closed outcome type of one step.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grpo/core/env_contract.h"
#include "grpo/core/result.h"

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
  std::vector<std::string> exclude;          // nodes srun must not use (empty today)
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

// The allocation the job step runs in, as libslurm reports it.
struct Allocation {
  std::uint32_t job_id = 0;
  std::vector<std::string> nodes;  // expanded, in Slurm's order (node_rank i = nodes[i])
  int tasks_per_node = 0;          // 0 when the job did not fix it
};

// The allocation can run the rank map: at least spec.nodes usable nodes (not excluded), and when
// the job fixed its tasks per node, equal to ranks_per_node. Errors: kInvalidValue naming both.
Status check_allocation(const RunSpec& spec, const Allocation& allocation);

// The nodes the step will run on, in node_rank order: the allocation's nodes minus the excluded
// ones, the first spec.nodes of them.
std::vector<std::string> step_nodes(const RunSpec& spec, const Allocation& allocation);

// srun's argv for the run's one job step:
//   srun --mpi=pmix --label --kill-on-bad-exit=1 --distribution=block [--exclude=a,b]
//        --nodes=N --ntasks=N*T --ntasks-per-node=T [--cpus-per-task=C] <trainer argv...>
// `srun` is the program name (a path, or looked up in PATH).
std::vector<std::string> srun_command(const RunSpec& spec, const std::string& srun = "srun");

// How one job step ended (closed: visit it without a default branch).
struct StepSucceeded {};  // srun exited 0: every rank exited 0
struct StepFailed {       // srun exited non-zero (a rank failed, or srun could not launch)
  int exit_code = 1;
};
struct StepKilled {  // srun itself was killed by a signal nobody forwarded
  int signal = 0;
};
struct StepInterrupted {  // the supervisor received `signal`, forwarded it, and the step ended
  int signal = 0;
  int exit_code = 0;  // srun's exit code, or 128 + signal when srun died of a signal
};
using StepOutcome = std::variant<StepSucceeded, StepFailed, StepKilled, StepInterrupted>;

// One line: "succeeded", "failed: srun exited 143", "interrupted by SIGTERM (srun exited 143)".
std::string describe(const StepOutcome& outcome);

}  // namespace grpo::core
