// The allocation as Slurm's controller sees it, through libslurm. src/libslurm.cpp is the only
// translation unit that includes <slurm/slurm.h>; it owns every libslurm handle (RAII) and turns
// libslurm's errors into core::Error with slurm_strerror's text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/job/job_step.h"

namespace grpo::slurm {

struct JobInfo {
  std::uint32_t job_id = 0;
  std::string name;
  std::string state;  // "RUNNING", "PENDING", ... (base state)
  std::string partition;
  std::string node_list;           // compressed: "n[1-2]"
  std::vector<std::string> nodes;  // expanded through libslurm's hostlist, in Slurm's order
  int num_nodes = 0;
  int num_tasks = 0;
  int tasks_per_node = 0;                 // --ntasks-per-node when the job set it, else 0
  std::optional<int> time_limit_minutes;  // nullopt: unlimited / not set
  std::int64_t start_time = 0;            // Unix seconds; 0 when unknown
  std::int64_t end_time = 0;              // expected end (start + limit) while running
  int restart_count = 0;                  // times the job was requeued
  std::string batch_host;                 // node running the batch script
  std::string std_out;                    // the job's --output path (may hold %j patterns)
  std::string work_dir;                   // the job's working directory
};

// What the supervisor needs from Slurm, behind an interface so tests can fake it.
class JobSource {
 public:
  virtual ~JobSource() = default;
  // Errors: kNotFound (no such job), kUnavailable (controller unreachable), kInternal.
  virtual core::Result<JobInfo> load_job(std::uint32_t job_id) = 0;
};

// libslurm, initialised for the life of the object (slurm_init / slurm_fini). At most one
// instance exists at a time (libslurm's configuration is process-global).
class LibSlurm final : public JobSource {
 public:
  // Checks first that a configuration exists: $SLURM_CONF when set, else
  // /etc/slurm/slurm.conf (libslurm exits the whole process when it finds none, so it is never
  // called without one; configless clusters set SLURM_CONF inside jobs). Errors: kUnavailable
  // ("no Slurm configuration: ..."), kInternal (a second instance).
  static core::Result<std::unique_ptr<LibSlurm>> open();
  ~LibSlurm() override;
  LibSlurm(const LibSlurm&) = delete;
  LibSlurm& operator=(const LibSlurm&) = delete;

  core::Result<JobInfo> load_job(std::uint32_t job_id) override;

 private:
  LibSlurm() = default;
};

// Expands a Slurm host list ("n[1-3],gpu[07-08]") with libslurm's hostlist API (no controller
// and no slurm_init needed). Errors: kInvalidValue when libslurm cannot parse it.
core::Result<std::vector<std::string>> expand_hostlist(std::string_view list);

// A job id from text such as $SLURM_JOB_ID ("1234"). Errors: kMissingKey when null / empty,
// kInvalidValue when not a positive decimal number below 2^32.
core::Result<std::uint32_t> parse_job_id(const char* text, std::string_view what = "SLURM_JOB_ID");

// libslurm error number -> core::Error: "<what>: <slurm_strerror> (<errno>)". Communication
// failures (1001-1013, 1800-1803, 5000-5004) are kUnavailable, an unknown job id (2017) kNotFound,
// anything else kInternal.
core::Error slurm_error(std::string_view what, int slurm_errno);

// The allocation for core::check_allocation.
core::Allocation to_allocation(const JobInfo& job);

}  // namespace grpo::slurm
