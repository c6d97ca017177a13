// The grpo-launch commands. Each takes parsed arguments, does its I/O through the adapters, and
// returns an exit code (exit_codes.h). main.cpp only wires CLI11 to these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grpo/app/launch.h"
#include "grpo/core/result.h"
#include "grpo/plan/planner.h"

namespace grpo::cli {

// The launch use cases' requests (grpo/app/launch.h), filled from the flags.
using app::LaunchArgs;
using app::PlanArgs;
using app::SupervisorFlags;

struct GlobalArgs {
  std::vector<std::string> profile_dirs;
  std::string log_level;  // --log-level; empty: the command's default (warn; info for run)
};

struct CheckArgs {
  std::vector<std::string> files;
  std::string profile;
  std::string model;
  std::vector<std::string> sets;
  std::string engines;  // --engines
  bool parallel = false;
  bool memory = false;
  bool data_types = false;
  std::string format = "text";
};

struct SuperviseArgs {
  std::string run_dir;
  std::string srun = "srun";  // --srun (a path, or a name looked up in PATH)
  bool local = false;         // --local: run the ranks here even inside a Slurm job
};

// `grpo-launch health-check` (internal: the supervisor's health step runs it on every node).
struct HealthCheckArgs {
  std::string run_dir;
  std::uint64_t min_free_bytes = 0;
  bool gpus = false;
  std::string command;  // --command: the run's --health-check
};

struct StatusArgs {
  std::string target;  // run directory or Slurm job id
  std::string format = "text";
};
struct EventsArgs {
  std::string target;
  bool follow = false;
  std::vector<std::string> types;
  std::string format = "text";
};
struct ReportArgs {
  std::vector<std::string> targets;  // one run; several (at most 5) are overlaid
  std::string output;  // default <run_dir>/report.html; for several runs ./compare-report.html
};

// `grpo-launch export` (export_command.cpp, docs/hf-checkpoints.md "Export").
struct ExportArgs {
  std::string run_dir;
  std::optional<std::int64_t> step;    // --step (default: the newest checkpoint that verifies)
  std::string output;                  // -o DIR
  std::string dtype = "bf16";          // --dtype bf16|fp16|fp32
  std::string max_shard_size = "5GB";  // --max-shard-size
};

int cmd_status(const GlobalArgs& global, const StatusArgs& args);
// Writes a run's checkpoint as a Hugging Face model directory. Exit 0; 2 run directory,
// checkpoint or model unreadable / not verifying; 73 the output directory exists and is not
// empty, or cannot be written.
int cmd_export(const GlobalArgs& global, const ExportArgs& args);
int cmd_events(const GlobalArgs& global, const EventsArgs& args);
int cmd_report(const GlobalArgs& global, const ReportArgs& args);
int cmd_plan(const GlobalArgs& global, const PlanArgs& args);
// Prints the batch script of a plan (exit 0), or the error.
int cmd_render(const GlobalArgs& global, const LaunchArgs& args);
// Plans, writes the run directory and calls sbatch; with plan.dry_run prints the summary and the
// script only. Exit: 0, 1 infeasible plan, 2 input, 69 Slurm unreachable, 73 run directory,
// 76 sbatch refused.
int cmd_submit(const GlobalArgs& global, const LaunchArgs& args);
// Supervises a run directory until training finishes (supervise_commands.cpp): inside a Slurm
// job through srun job steps, elsewhere with local ranks. Exit codes in docs/exit-codes.md.
int cmd_supervise(const GlobalArgs& global, const SuperviseArgs& args);
// Checks this node (node_health.h) and prints its answer lines; exit 0 healthy, 1 unhealthy.
int cmd_health_check(const HealthCheckArgs& args);
// Plans, writes the run directory (or continues an existing one) and supervises it locally.
int cmd_run(const GlobalArgs& global, const LaunchArgs& args);
int cmd_check(const GlobalArgs& global, const CheckArgs& args);
int cmd_profiles(const GlobalArgs& global, const std::string& format);

// One line on stderr: "grpo-launch: error: <message>".
void print_error(const std::string& message);
// print_error(e.str()), then e's exit code (exit_codes.h exit_code_for).
int fail(const core::Error& e);
// The same, with a given exit code.
int fail(const core::Error& e, int code);
// "grpo-launch: warning: <message>" on stderr, on one line.
void print_warning(const std::string& message);

}  // namespace grpo::cli
