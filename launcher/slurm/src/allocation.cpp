#include "grpo/slurm/allocation.h"

namespace grpo::slurm {

core::Result<JobInfo> discover_allocation(JobSource& slurm, std::uint32_t job_id,
                                          const core::RunSpec& spec) {
  GRPO_TRY(JobInfo job, slurm.load_job(job_id));
  GRPO_TRY_STATUS(core::check_allocation(spec, to_allocation(job)));
  return job;
}

}  // namespace grpo::slurm
