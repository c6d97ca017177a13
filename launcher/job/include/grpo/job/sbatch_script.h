// The data of the sbatch script: a pure function from a plan and the run's options to the view
// that templates/sbatch.mustache is rendered with (the rendering itself is launcher/render).
// Every value in the view is final text for the script: shell-quoted where the shell reads it,
// validated where Slurm reads it (#SBATCH lines are not shell-parsed and cannot be quoted).
// Variables, quoting rules and the run directory layout: docs/sbatch-template.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/plan/planner.h"

namespace grpo::core {

struct SbatchRunOptions {
  std::string run_dir;        // absolute path of the run directory (need not exist yet)
  std::string launcher_path;  // absolute path of the grpo-launch executable
  std::string run_id;         // the run directory's name; exported as GRPO_RUN_ID
  std::string version;        // grpo-launch version, shown in the header comment
  int spare_nodes = 0;        // hot spares: nodes asked for beyond the rank map's
};

// One exported variable: `export <name>=<value>`; value is already shell-quoted.
struct SbatchEnvVar {
  std::string name;
  std::string value;
  friend bool operator==(const SbatchEnvVar&, const SbatchEnvVar&) = default;
};

// The template's variables (docs/sbatch-template.md lists each). Optional directives are empty
// when absent (mustache sections skip them).
struct SbatchView {
  std::string version;       // grpo-launch version
  std::string profile_name;  // plan.cluster.name, sanitize_name()d (header comment)
  std::string model_name;    // plan.model.name, sanitize_name()d
  // #SBATCH values (validated, never quoted):
  std::string job_name;                 // "grpo-<model>-<profile>", sanitized
  std::string nodes;                    // rank map nodes + spare nodes
  std::string ntasks_per_node;          // rank map ranks_per_node
  std::string gpus_per_node;            // NVIDIA/Ascend without slurm.gres
  std::string gres;                     // slurm.gres (NVIDIA/Ascend only)
  std::string cpus_per_task;            // host.cpu_cores / ranks_per_node, when cpu_cores is known
  std::string mem;                      // slurm.mem
  std::string time;                     // slurm.time
  std::string partition;                // slurm.partition
  std::string account;                  // slurm.account
  std::string qos;                      // slurm.qos
  std::string constraint;               // slurm.constraint
  std::string signal;                   // "B:USR2@<signal_lead_seconds>" (empty when the lead is 0)
  std::string output;                   // <run_dir>/slurm-%j.out
  std::string error;                    // <run_dir>/slurm-%j.err
  std::vector<std::string> extra_args;  // slurm.extra_args, each "--flag" or "--flag=value"
  // Shell text (quoted):
  std::vector<SbatchEnvVar> env;  // plan env "job" (sorted), then GRPO_RUN_DIR, GRPO_RUN_ID
  std::string launcher;           // shell_quote(launcher_path)
  std::string run_dir;            // shell_quote(run_dir)
};

// Builds the view. Errors (kInvalidValue, one line naming the field and the offending
// character, with the profile file as location): a #SBATCH value with a character Slurm would
// split on or that could end the line (each field has its own allowed set, see the doc), an
// extra_args entry that is not --flag[=value] or that sets what the plan owns (--nodes,
// --ntasks*, --output, --error, --open-mode, ...), a run directory unusable in --output, an [env]
// name that is not an identifier, a NUL byte anywhere, signal_lead_seconds outside 0..65535,
// per-node variables in the plan's env (not supported by the template). kInfeasible when the
// plan is not runnable (plan_ok false).
Result<SbatchView> make_sbatch_view(const Plan& plan, const SbatchRunOptions& options);

// The #SBATCH values that come from the cluster profile (partition ... extra_args, gres or
// --gpus-per-node, cpus per task for `ranks_per_node` tasks, signal) and --output / --error in
// `run_dir`, validated as make_sbatch_view does (the same errors). Used by make_sbatch_view and
// by `submit --engine verl` (verl_job.h).
Status fill_sbatch_directives(const ClusterProfile& c, int ranks_per_node,
                              const std::string& run_dir, SbatchView& v);

// Checks a value for a `#SBATCH --<option>=` line against the characters allowed for it
// (`allowed` holds the punctuation allowed besides ASCII letters and digits). Exposed for tests.
Status validate_sbatch_value(std::string_view field, std::string_view option,
                             std::string_view value, std::string_view allowed);

// The value with control and non-ASCII bytes escaped (\n, \t, \xNN), for one-line messages.
std::string printable(std::string_view value);

}  // namespace grpo::core
