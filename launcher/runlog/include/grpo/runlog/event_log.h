// The run's append-only event log (<run_dir>/events.jsonl, docs/events.md): one JSON object per
// line, every state change and action with its reason, plus the trainer's notable events. A
// supervisor that is itself restarted (the job was requeued) rebuilds its state by replaying
// the log (replay() below is pure); `grpo-launch status` and `events` read the same file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/core/telemetry_events.h"
#include "grpo/runlog/goodput.h"
#include "grpo/runlog/restart_policy.h"
#include "grpo/runlog/state_machine.h"

namespace grpo::supervise {

inline constexpr int kEventSchema = 1;

// Event types the supervisor writes.
namespace ev {
inline constexpr const char* kRunStarted = "run_started";  // supervisor (re)started
inline constexpr const char* kState = "state";             // from, to, trigger, reason
inline constexpr const char* kAttemptStarted = "attempt_started";
inline constexpr const char* kAttemptEnded = "attempt_ended";
inline constexpr const char* kFailure = "failure";           // class, description, details
inline constexpr const char* kDecision = "decision";         // kind, reason, delay, ...
inline constexpr const char* kRemediation = "remediation";   // what changed after an OOM
inline constexpr const char* kWarning = "warning";           // thresholds crossed
inline constexpr const char* kRunFinished = "run_finished";  // state, exit_code
inline constexpr const char* kTimeoutsCalibrated = "timeouts_calibrated";  // phase limits learned
inline constexpr const char* kNodeUnhealthy = "node_unhealthy";            // node, check, detail
inline constexpr const char* kHfExported = "hf_exported";                  // path, step, seconds
inline constexpr const char* kHfExportFailed = "hf_export_failed";         // path, message, seconds
inline constexpr const char* kHangReport = "hang_report";  // every rank's stack, grouped
// Forwarded from the trainer (rank 0 unless noted): step, checkpoint_saved, checkpoint_loaded,
// OOM_ERROR, EXPERT_IMBALANCE, COMM_ERROR; and the supervisor's own "straggler".
// Their names are the trainer's (grpo/core/telemetry_events.h).
inline constexpr const char* kStep = core::telemetry::event::kStep;
inline constexpr const char* kCheckpointSaved = core::telemetry::event::kCheckpointSaved;
inline constexpr const char* kCheckpointLoaded = core::telemetry::event::kCheckpointLoaded;
inline constexpr const char* kOomError = core::telemetry::event::kOomError;
inline constexpr const char* kExpertImbalance = core::telemetry::event::kExpertImbalance;
inline constexpr const char* kStraggler = "straggler";
// The step events of a large world folded into one per step (step_aggregate.h).
inline constexpr const char* kStepRanks = "step_ranks";
}  // namespace ev

// What the log says about the run so far.
// The Hugging Face export at the end of a run (hf_exported / hf_export_failed).
struct HfExportRecord {
  bool ok = false;
  std::string path;
  std::int64_t step = -1;  // the checkpoint exported (ok only)
  double seconds = 0;
  std::string message;  // why it failed
};

struct RunSummary {
  RunState state = RunState::kLaunching;
  bool started = false;               // a run_started event was seen
  int supervisor_starts = 0;          // run_started events (1 + requeues / supervisor restarts)
  int attempt = 0;                    // number of the newest attempt (1-based; 0: none yet)
  History history;                    // one record per attempt
  std::vector<std::string> excluded;  // nodes excluded so far
  std::optional<int> micro_batch;     // after OOM remediation
  bool offload = false;               // after OOM remediation
  std::int64_t latest_checkpoint_step = -1;
  std::int64_t last_step = 0;
  std::int64_t total_steps = 0;
  // Newest training metrics (from forwarded `step` events of rank 0).
  std::optional<double> reward;      // reward_mean
  std::optional<double> val_reward;  // newest validation reward
  std::optional<double> tokens_per_s;
  std::optional<double> step_s;
  std::optional<double> loss;
  std::optional<double> kl;
  double recent_step_s = 0;  // moving average of wall time per step (for the ETA)
  // The layout the newest attempt ran ("TP=1 PP=1 CP=1 DP=2 EP=2 ETP=1"), from the trainer's
  // `layout` event; empty until one arrives (a --trainer-cmd program sends none).
  std::string layout;
  std::string profile;  // from run_started
  std::string model;
  std::optional<std::string> slurm_job_id;
  std::map<std::string, int> failures;  // by class
  int restarts = 0;                     // decisions to restart
  int requeues = 0;
  int oom_events = 0;
  int expert_imbalance_events = 0;
  int straggler_events = 0;
  std::optional<int> exit_code;  // from run_finished
  double first_time = 0;         // first event's time
  double last_time = 0;          // newest event's time
  // Where the wall time went: lost per cause (goodput.h).
  Goodput goodput;
  std::string last_notable;  // the newest failure / decision / warning, for status lines
  // The calibrated hang timeouts per phase class (newest timeouts_calibrated event's limits).
  std::map<std::string, double> phase_timeouts;
  // Attempt -> the phase class its hang happened in (failure event's `phase`), for status.
  std::map<int, std::string> hang_phases;
  std::optional<HfExportRecord> hf_export;  // the newest hf_exported / hf_export_failed
  // The newest hang_report event (hang attribution), null when none.
  nlohmann::json hang_report;
};

// Folds one event into the summary. Unknown event types are ignored (forward compatible);
// malformed known events are errors (kParse) naming the event's seq.
// A `decision` event's fields for `d` (docs/events.md): kind, reason, spends_budget, and a
// restart's delay, exclusions and remediation or a give-up's exit code.
nlohmann::json decision_fields(const Decision& d);

core::Status apply_event(RunSummary& summary, const nlohmann::json& event);
core::Result<RunSummary> replay(const std::vector<nlohmann::json>& events);

// Reads the text of a log. A final line without its newline (the writer died mid-line) is dropped
// with `torn` set; any other unparsable line is an error (kParse, file_name:line).
struct LogContents {
  std::vector<nlohmann::json> events;
  bool torn = false;
};
core::Result<LogContents> parse_event_log(std::string_view text, const std::string& file_name);

}  // namespace grpo::supervise
