// Submitting a batch script with sbatch (run through a ProcessRunner, no shell), and reading
// what sbatch says. The parsing and error classification are pure and unit-tested.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/process/process_runner.h"

namespace grpo::slurm {

struct Submitted {
  std::uint32_t job_id = 0;
  std::string cluster;  // set when sbatch --parsable printed "id;cluster"
};

struct SubmitRequest {
  std::string script;  // path of the batch script
  std::string sbatch = "sbatch";
  std::chrono::milliseconds timeout{60000};
};

// sbatch's input variables that would override what the script sets from the plan (output
// files, signal, requeue, ...); they are removed from sbatch's environment.
const std::vector<std::string>& overriding_sbatch_variables();

// `sbatch --parsable` prints "<id>" or "<id>;<cluster>". Errors: kInternal (anything else).
core::Result<Submitted> parse_sbatch_parsable(std::string_view out);

// The line of sbatch's stderr that says why it failed: the last line with "error:" (without
// the "sbatch: error: " prefix), else the last non-empty line; "" when there is none.
std::string sbatch_reason(std::string_view err);

// True when sbatch's message means Slurm could not be reached (controller down, no
// configuration, munge not running) rather than that it refused the job.
bool is_unreachable_message(std::string_view message);

// Runs `sbatch --parsable <script>`. Errors (one line, with sbatch's own message):
//   kUnavailable "Slurm is unreachable: sbatch not found on PATH ..." /
//                "Slurm is unreachable: sbatch: <reason>" / "sbatch timed out after N s ..."
//   kRejected    "sbatch rejected the job: <reason>"
// `maybe_submitted` (when given) is set to true when the outcome is unknown: sbatch timed out or
// died of a signal, so the controller may have accepted the job.
core::Result<Submitted> submit_batch(process::ProcessRunner& runner, const SubmitRequest& request,
                                     bool* maybe_submitted = nullptr);

}  // namespace grpo::slurm
