#include "grpo/job/job_step.h"

#include <algorithm>

namespace grpo::core {

std::vector<std::string> step_nodes(const RunSpec& spec, const Allocation& allocation) {
  std::vector<std::string> out;
  for (const auto& n : allocation.nodes) {
    if (std::find(spec.exclude.begin(), spec.exclude.end(), n) != spec.exclude.end()) continue;
    if (static_cast<int>(out.size()) == spec.nodes) break;
    out.push_back(n);
  }
  return out;
}

Status check_allocation(const RunSpec& spec, const Allocation& allocation) {
  const auto usable = step_nodes(spec, allocation);
  if (static_cast<int>(usable.size()) < spec.nodes) {
    return make_error(
        ErrorKind::kInvalidValue,
        "job " + std::to_string(allocation.job_id) + " has " +
            std::to_string(allocation.nodes.size()) + " node(s)" +
            (spec.exclude.empty() ? std::string()
                                  : " (" + std::to_string(usable.size()) + " not excluded)") +
            ", the rank map needs " + std::to_string(spec.nodes));
  }
  if (allocation.tasks_per_node > 0 && allocation.tasks_per_node != spec.ranks_per_node) {
    return make_error(ErrorKind::kInvalidValue, "job " + std::to_string(allocation.job_id) +
                                                    " runs " +
                                                    std::to_string(allocation.tasks_per_node) +
                                                    " task(s) per node, the rank map needs " +
                                                    std::to_string(spec.ranks_per_node));
  }
  return ok_status();
}

std::vector<std::string> srun_command(const RunSpec& spec, const std::string& srun) {
  std::vector<std::string> argv = {
      srun, "--mpi=pmix", "--label", "--kill-on-bad-exit=1", "--distribution=block", "--overlap"};
  if (!spec.exclude.empty()) {
    std::string list;
    for (const auto& n : spec.exclude) list += (list.empty() ? "" : ",") + n;
    argv.push_back("--exclude=" + list);
  }
  argv.push_back("--nodes=" + std::to_string(spec.nodes));
  argv.push_back("--ntasks=" + std::to_string(spec.world_size()));
  argv.push_back("--ntasks-per-node=" + std::to_string(spec.ranks_per_node));
  if (spec.cpus_per_task > 0)
    argv.push_back("--cpus-per-task=" + std::to_string(spec.cpus_per_task));
  argv.insert(argv.end(), spec.trainer_command.begin(), spec.trainer_command.end());
  return argv;
}

}  // namespace grpo::core
