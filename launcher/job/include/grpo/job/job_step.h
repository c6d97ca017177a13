// The pure parts of a run's job step: the allocation checked against the rank map and the srun
// command line (docs/sbatch-template.md, "supervise"). The supervisor runs the step once per
// attempt through supervise::SrunRunner (launcher/supervise/include/grpo/supervise/srun_runner.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/job/run_spec.h"

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

}  // namespace grpo::core
