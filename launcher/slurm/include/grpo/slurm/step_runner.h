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

#include "grpo/core/result.h"
#include "grpo/core/job_step.h"
#include "grpo/slurm/process_runner.h"
#include "grpo/slurm/slurm_job.h"

namespace grpo::slurm {

// Where the supervisor learns about signals sent to it.
class SignalSource {
 public:
  virtual ~SignalSource() = default;
  // The next pending signal (each delivery reported once; several of one kind may merge).
  virtual std::optional<int> take() = 0;
};

// Handlers for SIGTERM, SIGINT, SIGHUP and SIGUSR2 for the life of the object (the previous
// dispositions are restored afterwards). The handler only sets a bit (lock-free atomic); it
// does not use SA_RESTART, so a blocking wait returns early. One instance at a time.
class ProcessSignals final : public SignalSource {
 public:
  static core::Result<std::unique_ptr<ProcessSignals>> install();
  ~ProcessSignals() override;
  ProcessSignals(const ProcessSignals&) = delete;
  ProcessSignals& operator=(const ProcessSignals&) = delete;
  std::optional<int> take() override;
  static const std::vector<int>& handled();

 private:
  ProcessSignals() = default;
};

// Scripted signals for tests: take() returns them one by one, each after `delay_polls` calls.
class FakeSignals final : public SignalSource {
 public:
  void push(int sig, int delay_polls = 0) { script_.push_back({sig, delay_polls}); }
  std::optional<int> take() override;

 private:
  struct Item {
    int sig;
    int delay;
  };
  std::vector<Item> script_;
};

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
