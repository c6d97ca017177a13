// The allocation the supervisor runs in, loaded from libslurm and checked against the run's rank
// map. The job step itself is started once per attempt by supervise::SrunRunner.
#pragma once

#include <cstdint>

#include "grpo/core/result.h"
#include "grpo/job/job_step.h"
#include "grpo/slurm/slurm_job.h"

namespace grpo::slurm {

// The job the supervisor runs in, checked against the run: loads `job_id`, and checks it with
// core::check_allocation. Errors: those of JobSource::load_job, kInvalidValue (mismatch).
core::Result<JobInfo> discover_allocation(JobSource& slurm, std::uint32_t job_id,
                                          const core::RunSpec& spec);

}  // namespace grpo::slurm
