// The CLI's exit codes, documented in docs/exit-codes.md (a test keeps the two in step).
#pragma once

#include <variant>

#include "grpo/core/job_step.h"
#include "grpo/core/result.h"

namespace grpo::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFindings = 1,      // errors found: infeasible plan, check found errors
  kExitInput = 2,         // an input could not be read or parsed (file, profile, --set value)
  kExitUsage = 64,        // bad command line
  kExitUnavailable = 69,  // Slurm (or another service) cannot be reached
  kExitInternal = 70,     // a bug
  kExitCantCreate = 73,   // the run directory or an output file cannot be written
  kExitInterrupted = 75,  // run/supervise: requeued (the job comes back and resumes)
  kExitRejected = 76,     // a service refused the request (sbatch error)
  kExitStepFailed = 80,   // run/supervise: failures used up the restart budget
  // run / supervise only; the same values as supervise::SupervisorExit (restart_policy.h)
  kExitNoProgress = 81,      // restarts made no new checkpoint: do not requeue
  kExitNotRetryable = 82,    // a deterministic error (configuration): retrying cannot help
  kExitOutOfMemory = 83,     // out of memory with nothing left to shrink
  kExitUserInterrupt = 130,  // stopped by SIGINT / SIGTERM outside Slurm, after a checkpoint
};

inline int exit_code_for(const core::Error& e) {
  switch (e.kind) {
    case core::ErrorKind::kParse:
    case core::ErrorKind::kInvalidValue:
    case core::ErrorKind::kWrongType:
    case core::ErrorKind::kUnknownKey:
    case core::ErrorKind::kMissingKey:
    case core::ErrorKind::kNotFound:
    case core::ErrorKind::kCycle:
      return kExitInput;
    case core::ErrorKind::kIo:
      return kExitCantCreate;
    case core::ErrorKind::kUnavailable:
      return kExitUnavailable;
    case core::ErrorKind::kRejected:
      return kExitRejected;
    case core::ErrorKind::kInfeasible:
      return kExitFindings;
    case core::ErrorKind::kInternal:
      return kExitInternal;
  }
  return kExitInternal;
}

// supervise's exit code for how its job step ended.
inline int exit_code_for(const core::StepOutcome& outcome) {
  struct Visitor {
    int operator()(const core::StepSucceeded&) const { return kExitOk; }
    int operator()(const core::StepFailed&) const { return kExitStepFailed; }
    int operator()(const core::StepKilled&) const { return kExitStepFailed; }
    int operator()(const core::StepInterrupted&) const { return kExitInterrupted; }
  };
  return std::visit(Visitor{}, outcome);
}

}  // namespace grpo::cli
