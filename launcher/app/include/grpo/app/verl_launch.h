// The verl launch use case (`render` / `submit --engine verl SCRIPT`, docs/verl.md), out of the
// CLI: from a verl launch script that `check` passed, the run directory that runs it inside the
// allocation under the supervisor: the batch script (templates/sbatch.mustache, one task per
// node), verl-attempt.sh (Ray and the driver, grpo/verl/verl_job.h), verl.json (what supervise
// needs to know), run.json, env.json, rankmap.json and supervisor.json.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "grpo/app/launch.h"
#include "grpo/core/result.h"
#include "grpo/job/run_spec.h"
#include "grpo/shell/shell_script.h"
#include "grpo/verl/checker.h"

namespace grpo::app {

struct VerlPrepared {
  std::string run_dir;                       // absolute
  std::map<std::string, std::string> files;  // the run directory's files by name
  std::string script;                        // job.sbatch
  core::RunSpec run;
  std::vector<std::string> notes;  // what submit changed in the driver's overrides
};

// The run of `args.script` (`parsed` is its reading, `report` check's report of it, without
// errors): the profile is --profile or the one check found, with --set. Errors: a script whose
// verl command cannot be run (core::verl_driver), the catalog's, a missing template, a run
// directory that cannot appear in a batch script.
core::Result<VerlPrepared> prepare_verl(const std::vector<std::string>& profile_dirs,
                                        const LaunchArgs& args, const core::CheckReport& report,
                                        const core::ParsedScript& parsed);

}  // namespace grpo::app
