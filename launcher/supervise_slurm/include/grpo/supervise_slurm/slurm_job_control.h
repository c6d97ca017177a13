// JobControl inside a Slurm job: the end time from libslurm (slurm_job.h's JobSource), node
// health from `sinfo -h -N -n <nodes> -o "%N %T"` (down, drained, draining, fail, failing, or
// the '*' suffix of a node not responding mean unhealthy) and `scontrol requeue <job>`, both
// through a ProcessRunner (no shell).
// Separate library (grpo_supervise_slurm) so that grpo_supervise needs no libslurm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/process/process_runner.h"
#include "grpo/slurm/slurm_job.h"
#include "grpo/supervise/job_control.h"

namespace grpo::supervise {

struct SlurmJobControlOptions {
  std::uint32_t job_id = 0;
  int restart_count = 0;                      // $SLURM_RESTART_COUNT
  std::vector<std::string> allocation_nodes;  // libslurm's expanded node list
  std::string sinfo = "sinfo";
  std::string scontrol = "scontrol";
};

class SlurmJobControl final : public JobControl {
 public:
  SlurmJobControl(slurm::JobSource& jobs, process::ProcessRunner& runner,
                  SlurmJobControlOptions options)
      : jobs_(jobs), runner_(runner), o_(std::move(options)) {}
  bool under_slurm() const override { return true; }
  std::optional<std::string> job_id() const override { return std::to_string(o_.job_id); }
  int restart_count() const override { return o_.restart_count; }
  std::vector<std::string> allocation_nodes() const override { return o_.allocation_nodes; }
  core::Result<std::optional<double>> end_time() override;
  core::Result<std::vector<std::string>> unhealthy_nodes(
      const std::vector<std::string>& nodes) override;
  core::Status requeue() override;

 private:
  slurm::JobSource& jobs_;
  process::ProcessRunner& runner_;
  SlurmJobControlOptions o_;
};

// One node state as `sinfo -o %T` prints it ("idle", "mixed", "allocated+", "drained",
// "draining", "down*", "idle~", "idle+drain", ...): down, drained, draining, fail, failing or
// not responding (the '*' suffix). Case-insensitive.
bool unhealthy_node_state(std::string_view state);
// sinfo's "%N %T" lines -> the unhealthy nodes among them (pure, for tests).
std::vector<std::string> parse_unhealthy_nodes(const std::string& sinfo_output);

}  // namespace grpo::supervise
