// The launch use cases, out of the CLI (docs/architecture.md): planning from a profile and a
// model, and preparing a run (its directory's files, trainer command, supervisor settings, batch
// script) for `grpo-launch plan`, `render`, `submit` and `run`, which only parse flags into these
// requests and print what comes back. Creating and submitting the run directory is here too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "grpo/app/export_run.h"
#include "grpo/core/result.h"
#include "grpo/job/run_spec.h"
#include "grpo/job/sbatch_script.h"
#include "grpo/plan/planner.h"
#include "grpo/supervise/supervisor.h"

namespace grpo::app {

// What to plan: a profile and a model by name or file, found on the profile search path.
struct PlanArgs {
  std::string profile;
  std::string model;
  std::vector<std::string> sets;  // "key=value"
  std::string engines;            // --engines "verl=0.7,megatron=0.15,vllm=0.12" (empty: defaults)
  std::string format = "text";
  int alternatives = 3;
  bool dry_run = false;
  std::string emit;    // plan --emit verl: write the plan as a verl launch script
  std::string output;  // plan -o FILE: where the emitted script goes (default stdout)
};

// The supervisor's settings given to run / submit; they travel in <run_dir>/supervisor.json
// (docs/supervisor.md).
struct SupervisorFlags {
  int max_restarts = 5;                     // --max-restarts
  double backoff_s = 1;                     // --backoff
  double backoff_max_s = 60;                // --backoff-max
  int no_progress_restarts = 3;             // --no-progress-restarts
  double hang_timeout_s = 0;                // --hang-timeout (0: derived from step times)
  double startup_timeout_s = 300;           // --startup-timeout
  std::vector<std::string> phase_timeouts;  // --phase-timeout PHASE=SECONDS (repeatable)
  std::string health_check;                 // --health-check CMD (shell syntax, no shell)
  double stop_grace_s = 5;                  // --stop-grace
  double end_margin_s = 0;                  // --end-margin (0: derived; verl: self_save.h's 180 s)
  int min_nodes = 0;       // --min-nodes (0: 1 for grpo-trainer, all for --trainer-cmd)
  int spare_nodes = 0;     // --spare-nodes: the job asks for this many more nodes (submit)
  bool export_hf = false;  // --export-hf: <run_dir>/hf after the run succeeded (grpo-trainer)
};

// What to launch: a plan's request and how its run is made and supervised.
struct LaunchArgs {
  PlanArgs plan;              // profile, model, --set, --dry-run (format: the dry run's summary)
  std::string trainer_cmd;    // --trainer-cmd: shell syntax, split without a shell
  std::string run_dir;        // --run-dir (default ./runs/<model>-<profile>-<UTC time>)
  std::string template_file;  // --template (default: the installed templates/sbatch.mustache)
  int sbatch_timeout_s = 60;  // --sbatch-timeout
  std::vector<std::string> trainer_sets;  // the trainer's keys among --set (split_trainer_sets)
  std::vector<std::string> faults;        // --fault: passed to grpo-trainer
  SupervisorFlags supervisor;
  std::string engine;  // render / submit --engine verl: run an existing verl script instead
  std::string script;  // the verl launch script (with --engine verl)
};

// Loads the profile and model (with --set) from catalog(profile_dirs), and
// plans. With `embedded_trainer`, only among the layouts grpo-trainer runs
// (core::limit_to_embedded_trainer), as it runs them when one fits that way; otherwise `note`
// (when given) says what the estimate assumes that the trainer lacks. Errors: input errors of
// the catalog and of --set.
core::Result<core::Plan> build_plan(const std::vector<std::string>& profile_dirs,
                                    const PlanArgs& args, bool embedded_trainer = false,
                                    std::string* note = nullptr);

// A run prepared from a plan, not yet on disk.
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
// grpo-trainer's layouts unless --trainer-cmd); build_plan's note goes to `warn`.
core::Result<core::Plan> build_launch_plan(const std::vector<std::string>& profile_dirs,
                                           const LaunchArgs& args, const WarningSink& warn);
// The run of a plan: run directory name, trainer command (the embedded grpo-trainer with the
// plan's workload settings, the user's trainer --set and --fault; or --trainer-cmd), the
// supervisor settings (with the layouts to continue at after losing nodes), and with
// `render_script` the batch script. Errors: input errors (--trainer-cmd syntax, trainer settings
// with --trainer-cmd), a missing template.
core::Result<Prepared> prepare(const std::vector<std::string>& profile_dirs, const LaunchArgs& args,
                               core::Plan plan, bool render_script);
// plan.json, rankmap.json, env.json, run.json, supervisor.json, the rendezvous secret (and
// job.sbatch when rendered).
std::map<std::string, std::string> run_dir_files(const Prepared& p);
supervise::SupervisorConfig supervisor_config(const LaunchArgs& args, const core::Plan& plan);
// SFT + GRPO steps of grpo-trainer with these settings.
std::int64_t total_steps(const std::vector<std::string>& trainer_sets);
// Moves the trainer's --set keys (core::is_trainer_key) from plan.sets to trainer_sets.
LaunchArgs split_trainer_sets(const LaunchArgs& args);

// The batch script: `view` rendered with `template_file` (--template), else the installed
// templates/sbatch.mustache next to the executable. Errors: kNotFound, read errors, the
// template's (render::render_sbatch, naming the template).
core::Result<std::string> render_batch_script(const std::string& template_file,
                                              const core::SbatchView& view);
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
// cannot be written goes to `warn`.
core::Result<std::string> submit_run_dir(const std::string& run_dir,
                                         const std::map<std::string, std::string>& files,
                                         const std::vector<std::string>& executable,
                                         int sbatch_timeout_s, const std::string& created_utc,
                                         const WarningSink& warn);

}  // namespace grpo::app
