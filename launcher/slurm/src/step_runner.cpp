#include "grpo/slurm/step_runner.h"

namespace grpo::slurm {

using core::ErrorKind;
using core::make_error;

core::Result<JobInfo> discover_allocation(JobSource& slurm, std::uint32_t job_id,
                                          const core::RunSpec& spec) {
  GRPO_TRY(JobInfo job, slurm.load_job(job_id));
  GRPO_TRY_STATUS(core::check_allocation(spec, to_allocation(job)));
  return job;
}

core::Result<core::StepOutcome> run_step(ProcessRunner& runner, SignalSource& signals,
                                         const StepRequest& request) {
  CommandSpec cmd;
  cmd.argv = request.argv;
  cmd.env = request.env;
  cmd.out = Stream::kInherit;
  cmd.err = Stream::kInherit;
  cmd.new_process_group = true;
  auto started = runner.start(cmd);
  if (!started.ok()) {
    const auto& e = started.error();
    return make_error(
        e.kind == ErrorKind::kInternal ? ErrorKind::kInternal : ErrorKind::kUnavailable,
        "cannot start the job step: " + e.message);
  }
  std::unique_ptr<Process> step = std::move(started).value();
  std::optional<int> interrupted;
  while (true) {
    while (auto sig = signals.take()) {
      if (!interrupted) interrupted = *sig;
      GRPO_TRY_STATUS(step->signal(*sig));
    }
    GRPO_TRY(const std::optional<ExitStatus> end, step->wait_for(request.poll));
    if (!end) continue;
    if (interrupted)
      return core::StepOutcome{core::StepInterrupted{*interrupted, shell_code(*end)}};
    if (const auto* e = std::get_if<Exited>(&*end)) {
      if (e->code == 0) return core::StepOutcome{core::StepSucceeded{}};
      return core::StepOutcome{core::StepFailed{e->code}};
    }
    return core::StepOutcome{core::StepKilled{std::get<Signaled>(*end).signal}};
  }
}

}  // namespace grpo::slurm
