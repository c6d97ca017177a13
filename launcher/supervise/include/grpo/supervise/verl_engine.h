// Supervising verl (`grpo-launch submit --engine verl`, docs/verl.md): the attempt is one
// process on the batch host, the run directory's verl-attempt.sh, which starts Ray on the
// allocation and runs verl's driver. VerlRunner wraps the runner that starts it (LocalRunner) and
//   - turns verl's console step lines (`step:N - key:value - ...`, verl/utils/tracking.py
//     LocalLogger) into the supervisor's `step` events, with the whole interval between two
//     step lines as the step's wall time (verl's timing_s/step leaves out validation and the
//     save: ray_trainer.py fit times them apart, as timing_s/testing and
//     timing_s/save_checkpoint), and the line verl prints when a save begins
//     (ray_trainer.py _save_checkpoint "local_global_step_folder: ...") into a `heartbeat` of
//     phase `checkpoint` (a save in progress: the hang limit of a checkpoint applies, and the
//     supervisor waits for it before the job's end);
//   - exports the time the supervisor stops the attempt before the job's end (self_save.h) as
//     MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP, which verl's trainer reads
//     (verl/utils/checkpoint/checkpoint_manager.py should_save_ckpt_esi) to save before it;
//   - chooses each attempt's resume mode (verl_resume_for) and reports it as a `resume` event;
//   - reports the allocation's nodes as the attempt's nodes (node loss is asked about them);
//   - reports a new checkpoint of the run as a `checkpoint_saved` event.
// verl's checkpoints (trainer.default_local_dir/global_step_N, latest_checkpointed_iteration.txt)
// are the run's progress on disk: newest_verl_checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/supervise/attempt_runner.h"

namespace grpo::supervise {

// A verl console line of a training step, `step:N - training/global_step:N - key:value - ...`,
// as a telemetry `step` event (docs/verl.md lists the keys mapped to telemetry.md's fields; the
// others are dropped). `wall_s` is timing_s/step + timing_s/testing + timing_s/save_checkpoint
// (what the line says; VerlRunner widens it to the interval between lines). nullopt for other
// lines, among them the validation before training (`step:0 - val-core/...`: no
// training/global_step and no timing_s/step).
std::optional<nlohmann::json> parse_verl_step_line(std::string_view line);

// Whether `line` is verl announcing a checkpoint save (ray_trainer.py _save_checkpoint prints
// "local_global_step_folder: <dir>/global_step_N" first; fit prints "Force saving checkpoint: ESI
// instance expiration approaching." before a save before the end).
bool is_verl_save_line(std::string_view line);

// The newest complete checkpoint under `dir` written at or after `since` (seconds since the
// epoch; 0: any): the step N in latest_checkpointed_iteration.txt when global_step_N/actor exists
// and is not empty (a global_step_N holding only the driver's data.pt is no checkpoint), and the
// tracker's modification time is not before `since`; else -1.
std::int64_t newest_verl_checkpoint(const std::filesystem::path& dir, double since = 0);

// How an attempt starts verl (docs/verl.md "Restarts").
struct VerlResume {
  std::string mode;        // trainer.resume_mode to pass ("" : none, verl's default auto)
  std::int64_t step = -1;  // the run's own checkpoint it resumes from (-1: none)
  std::string from;        // what it starts from, for the event log
};
// The script's own mode until the run has a checkpoint of its own (`own_step` >= 0), then auto:
// never the base model when the run saved, never an older run's checkpoint under disable. With
// default_hdfs_dir set (`hdfs`) always the script's mode (verl cannot resume from it).
VerlResume verl_resume_for(std::int64_t own_step, const std::string& script_mode, bool hdfs,
                           const std::filesystem::path& checkpoint_dir);

// <run_dir>/verl.json (schema grpo-launch/verl/v1): what supervise needs to know about a verl run.
struct VerlRunInfo {
  std::string script;          // the user's launch script (absolute)
  std::string checkpoint_dir;  // absolute trainer.default_local_dir ("" when unknown)
  int nodes = 1;
  int gpus_per_node = 0;
  std::string resume_mode;  // the script's trainer.resume_mode ("": verl's default)
  bool hdfs = false;        // the script sets trainer.default_hdfs_dir
  double submitted = 0;     // seconds since the epoch; checkpoints before it are not the run's
};
nlohmann::json verl_run_info_to_json(const VerlRunInfo& info);
// Errors: kWrongType / kInvalidValue / kMissingKey naming `file`.
core::Result<VerlRunInfo> verl_run_info_from_json(const nlohmann::json& j, const std::string& file);

inline constexpr const char* kVerlEsiVariable = "MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP";

struct VerlRunnerOptions {
  // The job's end (seconds since the epoch) when known; asked at every start.
  std::function<std::optional<double>()> end_time;
  double end_reserve_s = 0;              // self_save_plan's reserve
  std::vector<std::string> nodes;        // the allocation's nodes (empty: the inner runner's)
  std::filesystem::path checkpoint_dir;  // trainer.default_local_dir (empty: unknown)
  std::string resume_mode;               // the script's
  bool hdfs = false;
  double submitted = 0;  // newest_verl_checkpoint's `since`
};

class VerlRunner final : public AttemptRunner {
 public:
  // A new checkpoint under `checkpoint_dir` becomes a `checkpoint_saved` event of rank 0 (looked
  // for at most once a second, and when the attempt ends).
  VerlRunner(std::unique_ptr<AttemptRunner> inner, VerlRunnerOptions options);
  std::string_view kind() const override { return "verl"; }
  core::Status start(const AttemptSpec& spec) override;
  core::Result<std::vector<AttemptEvent>> poll(double timeout_s) override;
  core::Status signal(int sig) override { return inner_->signal(sig); }
  core::Status kill() override { return inner_->kill(); }
  bool active() const override { return inner_->active(); }
  std::vector<std::string> nodes() const override;

 private:
  void translate(RankOutput& out, double now);

  std::unique_ptr<AttemptRunner> inner_;
  VerlRunnerOptions o_;
  std::int64_t newest_ = -1;
  double next_look_ = 0;
  bool watching_ = false;               // an attempt runs (its AttemptExit not returned yet)
  std::optional<std::string> pending_;  // the `resume` event, delivered with the first poll
  std::optional<double> last_step_at_;  // when the attempt's previous step line came
  std::int64_t last_step_ = 0;
};

}  // namespace grpo::supervise
