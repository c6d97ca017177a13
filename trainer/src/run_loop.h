// The run loop (internal to grpo_trainer): sets up the model and the data, resumes, then runs
// the steps (SFT warm-start, then GRPO; step_phases.h) with validation, the step event and log
// line, checkpoint and stop requests (run_control.h) and checkpoints (checkpointing.h).
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include "checkpointing.h"
#include "grpo/bootstrap/bootstrap.h"
#include "grpo/trainer/tensorboard_log.h"
#include "run_context.h"

namespace grpo::trainer {

class TrainingRun {
 public:
  TrainingRun(TrainerConfig cfg, core::ModelSpec spec, std::filesystem::path run_dir,
              std::unique_ptr<bootstrap::Bootstrap> boot, std::unique_ptr<Communicator> comm,
              Telemetry& telemetry, FaultInjector faults, std::unique_ptr<TaskData> data);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  // Runs to the last step, a stop request or an error, and returns the exit code
  // (exit_codes.h). Errors become events here; ExitRequest (an injected exit) and out-of-memory
  // (std::bad_alloc, c10::Error) propagate to run_trainer.
  int run();
  // This rank's look for the checkpoint to resume, started before the rendezvous.
  void look_ahead(std::future<CheckpointPick> pick) { checkpoints_.look_ahead(std::move(pick)); }

  const std::string& phase() const { return ctx_.phase; }
  std::int64_t current_step() const { return state_.step + 1; }

 private:
  // The parallel layout (ctx_.par) for the configuration and the world, logged.
  core::Status form_layout();
  void setup();
  // The `layout` event: the parallel sizes and what this rank holds (docs/telemetry.md).
  void emit_layout();
  // Reports a failed step and returns its exit code.
  int fail(const core::Error& e);
  // The step event and, on rank 0, the log line.
  void report_step(std::int64_t s, bool sft, const StepMetrics& m);
  // trainer.logger with tensorboard, on rank 0: opens the event file and feeds it the step and
  // validation events (docs/tensorboard.md).
  core::Status start_tensorboard();
  // trainer.save_freq = auto, after the save of step `s` that stopped training `cost_s` seconds
  // (`full_cost`: a synchronous save): rank 0 picks the next save step (Young-Daly, core/
  // checkpoint_interval.h), emits save_interval and broadcasts it. Collective.
  core::Status choose_save_interval(std::int64_t s, double cost_s, bool full_cost);
  // Step `s`: trains it (switching to GRPO first where GRPO begins), validates when due and
  // reports it.
  core::Status run_step(std::int64_t s);
  // After step `s`: agrees on the checkpoint and stop requests and saves when a save is due;
  // returns whether to stop. Collective.
  core::Result<bool> save_if_due(std::int64_t s);
  // After the checkpoint of step `s`, on request: returns kExitStopped.
  int stop_on_request(std::int64_t s);
  // After the last step: waits for the checkpoint writer and reports the final weights.
  int finish();

  std::filesystem::path run_dir_;
  std::unique_ptr<bootstrap::Bootstrap> boot_;
  RunContext ctx_;
  TrainState state_;
  Checkpointer checkpoints_;
  std::int64_t next_auto_save_ = 0;  // save_freq = auto: the next save's step (0: the first step)
  // Wall times of this attempt's latest steps (checkpoints excluded), at most kRecentSteps: the
  // step time of the checkpoint interval follows the run's pace (a GRPO step grows with its
  // responses and is several times an SFT step), which the attempt's overall mean lags behind.
  static constexpr std::size_t kRecentSteps = 20;
  std::deque<double> recent_step_s_;
  std::unique_ptr<TensorBoardLog> tensorboard_;  // rank 0 with trainer.logger tensorboard
  bool tensorboard_failed_ = false;              // a write failed: warned once, no more writes
};

}  // namespace grpo::trainer
