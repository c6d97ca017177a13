// The supervisor's TensorBoard scalars (docs/tensorboard.md "Supervisor"): restarts, failures
// (all and by class), requeues, attempts and the time lost to faults, at the training step they
// happened, in the supervisor's own event file beside the trainer's in <run_dir>/tensorboard/.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/runlog/event_log.h"
#include "grpo/tensorboard/event_file.h"

namespace grpo::supervise {

// True when the trainer's command line sets verl's trainer.logger (`--set trainer.logger=...`,
// `--set=trainer.logger=...` or a bare `trainer.logger=...` override) to a value naming
// tensorboard.
bool trainer_argv_wants_tensorboard(const std::vector<std::string>& argv);

// The scalars of the run so far (tags supervisor/...).
std::vector<tensorboard::Scalar> supervisor_scalars(const RunSummary& summary);

class SupervisorTensorBoard {
 public:
  // Writes when `enabled` (trainer_argv_wants_tensorboard) or once <run_dir>/tensorboard/
  // exists (a trainer configured from a TOML file made it).
  SupervisorTensorBoard(std::filesystem::path run_dir, bool enabled);

  // After every event the supervisor records: run_started, attempt_started, failure, decision
  // and run_finished write supervisor_scalars at summary.last_step. Never fails the run: the
  // first write error is logged (spdlog) and ends the file.
  void observe(std::string_view type, const RunSummary& summary);

 private:
  std::filesystem::path dir_;
  bool enabled_ = false;
  bool failed_ = false;
  std::optional<tensorboard::EventFileWriter> writer_;
};

}  // namespace grpo::supervise
