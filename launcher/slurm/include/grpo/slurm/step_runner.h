// Running the run's one job step (srun --mpi=pmix ... <trainer>) inside the allocation and
// turning how it ended into a core::StepOutcome. No restart logic: issue 6's supervisor calls
// this per attempt. Signals the supervisor receives (TERM, INT, HUP, USR2) are forwarded to
// srun, which passes them on to every rank.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/job_step.h"
#include "grpo/core/result.h"
#include "grpo/slurm/process_runner.h"
#include "grpo/slurm/signals.h"
#include "grpo/slurm/slurm_job.h"

namespace grpo::slurm {

// The job the supervisor runs in, checked against the run: loads `job_id`, and checks it with
// core::check_allocation. Errors: those of JobSource::load_job, kInvalidValue (mismatch).
core::Result<JobInfo> discover_allocation(JobSource& slurm, std::uint32_t job_id,
                                          const core::RunSpec& spec);

struct StepRequest {
  std::vector<std::string> argv;           // core::srun_command(spec)
  std::map<std::string, std::string> env;  // the plan's job environment (and GRPO_RUN_*)
  std::chrono::milliseconds poll{20};      // how often pending signals are checked
};

// Starts the step (stdout/stderr inherited: they go to the job's output files), forwards every
// signal `signals` reports, and waits for srun to end. Errors: kUnavailable (srun not found or
// cannot be started), kInternal (waiting failed).
core::Result<core::StepOutcome> run_step(ProcessRunner& runner, SignalSource& signals,
                                         const StepRequest& request);

}  // namespace grpo::slurm
