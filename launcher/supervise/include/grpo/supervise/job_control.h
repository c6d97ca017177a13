// What the supervisor asks of the batch system, behind one interface: the job's end time, the
// health of its nodes, and handing the job back (requeue). LocalJobControl is the answer
// without Slurm; SlurmJobControl (slurm_job_control.h) asks libslurm, sinfo and scontrol.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::supervise {

class JobControl {
 public:
  virtual ~JobControl() = default;
  virtual bool under_slurm() const = 0;
  virtual std::optional<std::string> job_id() const = 0;
  virtual int restart_count() const = 0;  // SLURM_RESTART_COUNT: requeues so far
  // The allocation's nodes in Slurm's order (empty locally).
  virtual std::vector<std::string> allocation_nodes() const = 0;
  // When the allocation ends (seconds since the epoch; its time limit), nullopt when it has none.
  // Errors: kUnavailable (the controller did not answer).
  virtual core::Result<std::optional<double>> end_time() = 0;
  // Those of `nodes` that Slurm reports DOWN, FAIL or not responding. Errors: kUnavailable.
  virtual core::Result<std::vector<std::string>> unhealthy_nodes(
      const std::vector<std::string>& nodes) = 0;
  // Hands the job back to Slurm (`scontrol requeue <job>`): it is killed and comes back with the
  // same id and SLURM_RESTART_COUNT + 1. Errors: kUnavailable, kRejected, kInternal (locally).
  virtual core::Status requeue() = 0;
};

// No batch system: nothing ends, nothing is requeued.
class LocalJobControl final : public JobControl {
 public:
  bool under_slurm() const override { return false; }
  std::optional<std::string> job_id() const override { return std::nullopt; }
  int restart_count() const override { return 0; }
  std::vector<std::string> allocation_nodes() const override { return {}; }
  core::Result<std::optional<double>> end_time() override { return std::optional<double>{}; }
  core::Result<std::vector<std::string>> unhealthy_nodes(const std::vector<std::string>&) override {
    return std::vector<std::string>{};
  }
  core::Status requeue() override {
    return core::make_error(core::ErrorKind::kInternal, "requeue without Slurm");
  }
};

}  // namespace grpo::supervise
