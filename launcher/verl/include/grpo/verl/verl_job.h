// `grpo-launch submit --engine verl SCRIPT` (pure): the verl driver command read from a checked
// launch script, and the text of the per-attempt script that starts Ray on the allocation, runs
// the driver on the head node and tears Ray down again. docs/verl.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grpo/core/cluster_profile.h"
#include "grpo/core/result.h"
#include "grpo/job/sbatch_script.h"
#include "grpo/shell/shell_script.h"

namespace grpo::core {

// The verl command of a launch script, as the checker read it.
struct VerlDriver {
  std::string file;        // where the command is written
  std::uint32_t line = 0;  // its first line
  // The interpreter and entry point as written, e.g. {"python3", "-m", "verl.trainer.main_ppo"}
  // (anything before the interpreter, such as `ray job submit --` or `srun ...`, is dropped).
  std::vector<std::string> command;
  // The Hydra overrides after the entry point, in order, without trainer.resume_mode (the attempt
  // script sets it) and without "$@" (arguments of the script are not known at submit time).
  std::vector<std::string> overrides;
  std::string resume_mode;       // the script's trainer.resume_mode ("" when it sets none)
  std::string checkpoint_dir;    // trainer.default_local_dir as written ("" when not set)
  std::int64_t total_steps = 0;  // trainer.total_training_steps when a whole number, else 0
  std::int64_t save_freq = 0;    // trainer.save_freq after the rules below
  bool hdfs = false;             // trainer.default_hdfs_dir is set (verl cannot resume from it)
  // What the rules below changed or found, one line each (submit prints them as notes).
  std::vector<std::string> notes;
  // Variables the script exports (with their final values), sorted by name.
  std::vector<std::pair<std::string, std::string>> env;
};

// Reads the first verl command of `script` (the one `check` reports first) and applies the rules
// that make the run supervisable (docs/verl.md, "What submit changes"), each with a note:
//   - trainer.logger without "console" gets it: the step lines are the supervisor's progress
//     (verl/utils/tracking.py Tracking: LocalLogger only when "console" is a backend);
//   - trainer.save_freq missing or <= 0 (verl's default -1 saves nothing, not even before the
//     end: ray_trainer.py fit) is set to max(1, total_training_steps / 10), 10 when unknown;
//   - ray_kwargs.ray_init.{num_cpus,num_gpus,resources,labels,object_store_memory,_node_name}
//     with a value are dropped: verl's run_ppo passes ray_init to ray.init, which refuses them
//     when it joins the cluster the attempt started (ray/_private/worker.py init: "When
//     connecting to an existing cluster, num_cpus and num_gpus must not be provided.");
//   - trainer.default_hdfs_dir set: noted (every resume_mode but disable raises in
//     ray_trainer.py _load_checkpoint, so restarts start from the base model).
// Errors (kInvalidValue, at the word's file:line:col): a word of the command or an exported
// value that could not be resolved statically (the job would not run what was checked), a NUL
// byte, a trainer.logger or trainer.save_freq that cannot be read; kParse when the script holds
// no verl command.
Result<VerlDriver> verl_driver(const ParsedScript& script);

// What the attempt script needs besides the driver.
struct VerlAttemptOptions {
  std::string version;         // grpo-launch version (header comment)
  std::string run_dir;         // absolute
  std::string script;          // the user's script (header comment)
  int nodes = 1;               // trainer.nnodes
  int gpus_per_node = 0;       // trainer.n_gpus_per_node
  std::string checkpoint_dir;  // absolute; passed as trainer.default_local_dir when not set
};

// The per-attempt script (bash) the supervisor runs on the batch host. Every value is
// shell-quoted (shell_quote); nothing from the user's script is evaluated. Errors: kInvalidValue
// for a NUL byte in a value.
Result<std::string> verl_attempt_script(const VerlDriver& driver,
                                        const VerlAttemptOptions& options);

// The batch script's view (templates/sbatch.mustache, docs/sbatch-template.md) for a verl run:
// `nodes` nodes with one task each (Ray starts its own workers), all of a node's CPUs for it
// (the profile's host.cpu_cores), `gpus_per_node` GPUs (or the profile's gres), the profile's
// other Slurm settings, and the script's exported variables. `name` is the run's name for the job
// name and header. Errors: those of fill_sbatch_directives; an exported name that is not an
// identifier or one grpo-launch sets.
Result<SbatchView> make_verl_sbatch_view(const VerlDriver& driver, const ClusterProfile& profile,
                                         int nodes, int gpus_per_node, const std::string& name,
                                         const SbatchRunOptions& options);

}  // namespace grpo::core
