// The pure parts of a run's job step: the allocation checked against the rank map, the srun
// command line, and the closed outcome type of one step (docs/sbatch-template.md, "supervise").
// The step is run by slurm::run_step (launcher/slurm/include/grpo/slurm/step_runner.h).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/core/run_spec.h"

namespace grpo::core {

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
//   srun --mpi=pmix --label --kill-on-bad-exit=1 --distribution=block --overlap [--exclude=a,b]
// (--overlap: after a node died, the previous step holds its CPUs on the surviving nodes until
// Slurm declares the node down; the next step must not wait for them.)
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
