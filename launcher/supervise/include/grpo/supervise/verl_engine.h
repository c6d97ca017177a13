// Supervising verl (`grpo-launch submit --engine verl`, docs/verl.md): the attempt is one
// process on the batch host, the run directory's verl-attempt.sh, which starts Ray on the
// allocation and runs verl's driver. VerlRunner wraps the runner that starts it (LocalRunner) and
//   - turns verl's console step lines (`step:N - key:value - ...`, verl/utils/tracking.py
//     LocalLogger) into the supervisor's `step` events (progress, step intervals for the hang
//     timeout, reward and loss for status and the report);
//   - exports the job's end time as MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP, which
//     verl's checkpoint manager reads (verl/utils/checkpoint/checkpoint_manager.py
//     should_save_ckpt_esi) to save before the end;
//   - reports the allocation's nodes as the attempt's nodes (node loss is asked about them);
//   - reports a new verl checkpoint as a `checkpoint_saved` event.
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

// A verl console line `step:N - key:value - ...` as a telemetry `step` event (docs/verl.md lists
// the keys mapped to telemetry.md's fields; the others are dropped). nullopt for other lines.
std::optional<nlohmann::json> parse_verl_step_line(std::string_view line);

// The newest complete verl checkpoint under `dir`: the step in latest_checkpointed_iteration.txt
// when its global_step_<N> directory exists, else -1.
std::int64_t newest_verl_checkpoint(const std::filesystem::path& dir);

// <run_dir>/verl.json (schema grpo-launch/verl/v1): what supervise needs to know about a verl run.
struct VerlRunInfo {
  std::string script;          // the user's launch script (absolute)
  std::string checkpoint_dir;  // absolute trainer.default_local_dir ("" when unknown)
  int nodes = 1;
  int gpus_per_node = 0;
};
nlohmann::json verl_run_info_to_json(const VerlRunInfo& info);
// Errors: kWrongType / kInvalidValue / kMissingKey naming `file`.
core::Result<VerlRunInfo> verl_run_info_from_json(const nlohmann::json& j, const std::string& file);

inline constexpr const char* kVerlEsiVariable = "MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP";

class VerlRunner final : public AttemptRunner {
 public:
  // `end_time`: the job's end (seconds since the epoch) when known; asked at every start.
  // `nodes`: the allocation's nodes (empty: the inner runner's).
  // `checkpoint_dir`: verl's trainer.default_local_dir (empty: unknown); a new checkpoint there
  // becomes a `checkpoint_saved` event of rank 0 (looked for at most once a second, and when the
  // attempt ends).
  VerlRunner(std::unique_ptr<AttemptRunner> inner, std::function<std::optional<double>()> end_time,
             std::vector<std::string> nodes, std::filesystem::path checkpoint_dir = {});
  std::string_view kind() const override { return "verl"; }
  core::Status start(const AttemptSpec& spec) override;
  core::Result<std::vector<AttemptEvent>> poll(double timeout_s) override;
  core::Status signal(int sig) override { return inner_->signal(sig); }
  core::Status kill() override { return inner_->kill(); }
  bool active() const override { return inner_->active(); }
  std::vector<std::string> nodes() const override;

 private:
  std::unique_ptr<AttemptRunner> inner_;
  std::function<std::optional<double>()> end_time_;
  std::vector<std::string> nodes_;
  std::filesystem::path checkpoint_dir_;
  std::int64_t newest_ = -1;
  double next_look_ = 0;
  bool watching_ = false;  // an attempt runs (its AttemptExit not returned yet)
};

}  // namespace grpo::supervise
