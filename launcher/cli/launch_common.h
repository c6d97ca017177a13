// What render, submit and run share (launch_commands.cpp): the prepared run (plan, run
// directory, trainer command, supervisor settings, batch script) and the run directory's files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "grpo/job/run_spec.h"
#include "grpo/job/sbatch_script.h"
#include "grpo/plan/planner.h"
#include "grpo/supervise/supervisor.h"

namespace grpo::cli {

struct Prepared {
  core::Plan plan;
  std::string run_dir;  // absolute
  std::string script;   // empty unless rendered
  core::RunSpec run;
  std::vector<std::string> trainer_sets;
  supervise::SupervisorConfig supervisor;
  // Why the embedded grpo-trainer cannot run the plan's layout (empty when it can, or with
  // --trainer-cmd): run and submit refuse such a plan, render and --dry-run warn.
  std::string unsupported_layout;
};

// build_plan for render, submit and run (`args.plan` with the trainer's --set split off; only
// grpo-trainer's layouts unless --trainer-cmd); build_plan's note becomes a warning on stderr.
core::Result<core::Plan> build_launch_plan(const GlobalArgs& global, const LaunchArgs& args);
// The run of a plan: run directory name, trainer command (the embedded grpo-trainer with the
// plan's workload settings, the user's trainer --set and --fault; or --trainer-cmd), the
// supervisor settings, and with `render_script` the batch script. Errors: input errors
// (--trainer-cmd syntax, trainer settings with --trainer-cmd), a missing template.
core::Result<Prepared> prepare(const GlobalArgs& global, const LaunchArgs& args, core::Plan plan,
                               bool render_script);
// templates/sbatch.mustache (or --template).
core::Result<std::string> load_sbatch_template(const LaunchArgs& args);
// plan.json, rankmap.json, env.json, run.json, supervisor.json (and job.sbatch when rendered).
std::map<std::string, std::string> run_dir_files(const Prepared& p);
supervise::SupervisorConfig supervisor_config(const LaunchArgs& args, const core::Plan& plan);
// SFT + GRPO steps of grpo-trainer with these settings.
std::int64_t total_steps(const std::vector<std::string>& trainer_sets);
// Moves the trainer's --set keys (core::is_trainer_key) from plan.sets to trainer_sets.
LaunchArgs split_trainer_sets(const LaunchArgs& args);
// "20261129T204500Z" and "2026-11-29T20:45:00Z" for now.
std::pair<std::string, std::string> utc_now();
// A new run's directory and batch-script identity: `run_dir` (--run-dir) made absolute without a
// trailing '/', or runs/<default_name> under the current directory; its name is the run id.
// Errors: kIo (the path cannot be resolved), kInternal (this executable cannot be found).
core::Result<core::SbatchRunOptions> run_options(const std::string& run_dir,
                                                 const std::string& default_name);
// Creates the run directory atomically with `files` (`executable` among them mode 0755),
// submits its job.sbatch and records job.json; returns the job id. A failed submission removes
// the directory unless sbatch may have accepted the job (the message says which). job.json that
// cannot be written is a warning.
core::Result<std::string> submit_run_dir(const std::string& run_dir,
                                         const std::map<std::string, std::string>& files,
                                         const std::vector<std::string>& executable,
                                         int sbatch_timeout_s, const std::string& created_utc);
// "Run directory: ...", then how to follow job `id` (its output, squeue, status).
void print_follow(const std::string& run_dir, const std::string& id);

}  // namespace grpo::cli
