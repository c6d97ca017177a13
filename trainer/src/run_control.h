// Checkpoint and stop requests from outside the run (internal to grpo_trainer; docs/trainer.md):
// SIGUSR2 or <run_dir>/control/checkpoint asks for a checkpoint at the end of the step,
// SIGTERM/SIGINT or <run_dir>/control/stop for a checkpoint and a stop; a second SIGTERM/SIGINT
// exits at once. The signal handlers only set flags; the ranks agree once per step.
#pragma once

#include <filesystem>

#include "grpo/core/result.h"
#include "grpo/trainer/communicator.h"

namespace grpo::trainer {

// Installs the SIGUSR2, SIGTERM and SIGINT handlers.
void install_signal_handlers();

struct ControlRequests {
  bool checkpoint = false;
  bool stop = false;
};

// This rank's requests (signals and control files) combined over all ranks (all-reduce max):
// every rank gets the same answer at the same step. Collective.
core::Result<ControlRequests> agree_on_control_requests(Communicator& comm,
                                                        const std::filesystem::path& run_dir);

// After a requested checkpoint was written: clears the signal flag and, on rank 0, removes the
// control file.
void acknowledge_checkpoint_request(const std::filesystem::path& run_dir, int rank);
// Before stopping on request: rank 0 removes the control file.
void acknowledge_stop_request(const std::filesystem::path& run_dir, int rank);

}  // namespace grpo::trainer
