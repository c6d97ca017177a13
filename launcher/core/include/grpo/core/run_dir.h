// The run directory's layout (docs/architecture.md "The run directory"): the one place its file
// and folder names are spelled. `submit` / `run` write it, `supervise`, `status`, `report` and
// `export` read it, grpo-trainer writes its checkpoints and logs into it; each side names a file
// through these constants, so a renamed file is renamed for every reader and writer at once
// (RunDirContract.NamesAreSpelledOnlyHere in tests/unit/run_dir_test.cpp refuses a name spelled
// anywhere else in the product sources).
#pragma once

#include <string>
#include <string_view>

namespace grpo::core::run_dir {

// Written by `submit` / `run` before the job starts (docs/sbatch-template.md).
inline constexpr std::string_view kRunSpec = "run.json";             // RunSpec (run_spec.h)
inline constexpr std::string_view kEnv = "env.json";                 // EnvMap (env_contract.h)
inline constexpr std::string_view kRankMap = "rankmap.json";         // docs/rank-map.md
inline constexpr std::string_view kPlan = "plan.json";               // the plan (GRPO_PLAN_FILE)
inline constexpr std::string_view kSupervisor = "supervisor.json";   // SupervisorConfig
inline constexpr std::string_view kVerlInfo = "verl.json";           // the verl run (docs/verl.md)
inline constexpr std::string_view kVerlAttempt = "verl-attempt.sh";  // one verl attempt's script
inline constexpr std::string_view kBatchScript = "job.sbatch";       // the rendered sbatch script
inline constexpr std::string_view kJob = "job.json";                 // the submitted job's id

// Written while the run goes on.
inline constexpr std::string_view kEvents = "events.jsonl";         // the supervisor's event log
inline constexpr std::string_view kAllocation = "allocation.json";  // the job's nodes (Slurm)
inline constexpr std::string_view kCheckpoints = "checkpoints";     // docs/checkpoint-format.md
inline constexpr std::string_view kLogs = "logs";                   // logs/attempt-N/
inline constexpr std::string_view kTensorboard = "tensorboard";     // event files
inline constexpr std::string_view kHfExport = "hf";                 // --export-hf's output

// In each attempt's log folder (logs/attempt-N).
inline constexpr std::string_view kSrunLog = "srun.log";
inline constexpr std::string_view kStacks = "stacks.txt";  // hang attribution

// In a checkpoint folder (checkpoints/step_XXXXXXXX, docs/checkpoint-format.md).
inline constexpr std::string_view kManifest = "manifest.json";
inline constexpr std::string_view kCheckpointConfig = "config.toml";
// The file in checkpoints/ naming the newest committed step folder.
inline constexpr std::string_view kLatest = "latest";

// "attempt-3": attempt 3's folder under logs/.
inline std::string attempt_log_dir(int attempt) {
  return "attempt-" + std::to_string(attempt);
}

}  // namespace grpo::core::run_dir
