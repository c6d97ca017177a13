// The CLI's exit codes, documented in docs/exit-codes.md (tests/unit/docs_test.cpp reads this
// header and supervise::SupervisorExit and keeps the table in step with them).
#pragma once

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
  kExitRejected = 76,     // a service refused the request (sbatch error)
  // run / supervise end with the supervisor's decision instead: supervise::SupervisorExit
  // (launcher/runlog/include/grpo/runlog/restart_policy.h), 75 and 80-84, 130.
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
    case core::ErrorKind::kNoSpace:
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

}  // namespace grpo::cli
