// The supervisor: runs a run's attempts until training is done, the job must yield, or the
// policy gives up (docs/supervisor.md). One loop shared by `grpo-launch run` (LocalRunner, no
// Slurm) and `grpo-launch supervise` (SrunRunner inside the allocation); unit tests drive it
// with the test doubles of tests/support (SimulatedRunner, FakeClock, FakeSignals,
// FakeJobControl), which only tests link.
//
// Principle: apply the event, act, record. Every state change and action is an event appended
// to <run_dir>/events.jsonl (docs/events.md) and folded into the in-memory RunSummary with the
// same apply_event() that replay() uses, so a supervisor that is itself restarted (the job was
// requeued) continues from the log: attempt numbers, the restart budget spent, the micro batch
// after OOM remediation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/core/verl_keys.h"
#include "grpo/process/signals.h"
#include "grpo/runlog/event_log.h"
#include "grpo/runlog/hang_report.h"
#include "grpo/runlog/restart_policy.h"
#include "grpo/supervise/attempt_runner.h"
#include "grpo/supervise/clock.h"
#include "grpo/supervise/event_log_file.h"
#include "grpo/supervise/job_control.h"
#include "grpo/supervise/monitor.h"
#include "grpo/supervise/node_health.h"
#include "grpo/supervise/run_exporter.h"
#include "grpo/supervise/supervisor_tensorboard.h"

namespace grpo::supervise {

// Counts of notable trainer events that trigger a `warning` event when reached (and again at
// every doubling).
struct WarningThresholds {
  int oom = 1;
  int expert_imbalance = 5;
  int straggler = 1;
};

// The supervisor's settings that travel with a run (<run_dir>/supervisor.json, written by
// submit / run, read by supervise). Schema "grpo-launch/supervisor/v1", docs/supervisor.md.
struct SupervisorConfig {
  TrainerContract contract = TrainerContract::kEmbedded;
  Budget budget;
  HangOptions hang;
  StragglerOptions straggler;
  WarningThresholds warnings;
  std::int64_t total_steps = 0;    // for progress and ETA (0: unknown)
  std::optional<int> micro_batch;  // the plan's micro batch; passed to the embedded trainer
  bool offload_supported = false;  // the embedded trainer cannot offload
  int min_nodes = 0;               // fewest nodes the plan runs on (0: all of them)
  std::vector<int> divisible_by;   // batch sizes the world size must divide when DP shrinks
  int world_unit = 1;              // the world size stays a multiple of this (TP x PP x CP, EP)
  // Nodes -> the trainer settings (--set key=value) of the layout the planner picks for that
  // many nodes, for the embedded trainer: after losing nodes the run continues on n nodes only
  // when n has an entry (and the batch sizes divide), at that layout, from the newest
  // checkpoint (which loads at any layout). Empty: the world_unit rule instead.
  std::map<int, std::vector<std::string>> replans;
  double stop_grace_s = 5;          // SIGTERM -> SIGKILL when stopping an attempt
  double checkpoint_timeout_s = 0;  // waiting for the checkpoint before yielding (0: derived)
  double end_margin_s = 0;          // yield this long before the job's end time (0: derived)
  // The trainer saves by itself before a time it was given (verl; self_save.h): the supervisor
  // neither signals it at the job's end nor on a USR2 it can wait out, yields at
  // self_save_plan(end, end_margin_s).decide_at once no save is in progress (a heartbeat of
  // phase `checkpoint` since its newest step), and waits for one until its deadline.
  bool saves_before_end = false;
  // The trainer reports its steps (verl's console lines): exit 0 without a new step is not
  // success, even for an external trainer.
  bool reports_steps = false;
  // Node health before every (re)start (node_health.h): --health-check (shell syntax, split
  // without a shell; empty: built-in checks only) and whether nvidia-smi must answer.
  std::string health_check;
  bool health_gpus = false;
  // The job's mean time between failures before any is seen (trainer.save_freq = auto): the
  // profile's node_mtbf_hours / nodes, in seconds. 0: the default node figure / nodes.
  double mtbf_prior_s = 0;
  // Step events of ranks below this number go to the event log as they come; in a larger world
  // the others are folded into one `step_ranks` event per step (step_aggregate.h).
  int step_event_ranks = 16;
  // After the run ends `succeeded`: write the Hugging Face export of its final checkpoint into
  // <run_dir>/hf (run_exporter.h; `run`/`submit --export-hf`).
  bool export_hf = false;
  // Hang attribution (hang_report.h): how long a hung attempt waits for every rank's stack
  // before it is killed. 0: no stacks are asked for.
  double stack_timeout_s = 5;
};

nlohmann::json supervisor_config_to_json(const SupervisorConfig& c);
// Errors: kParse / kWrongType / kInvalidValue naming `file`.
core::Result<SupervisorConfig> supervisor_config_from_json(const nlohmann::json& j,
                                                           const std::string& file);

// The embedded trainer's setting for the micro batch (OOM remediation changes it with --set).
inline constexpr const char* kMicroBatchKey = core::verl_key::kMicroBatch;

struct SupervisorOptions {
  std::filesystem::path run_dir;
  std::string profile;
  std::string model;
  std::vector<std::string> trainer_argv;   // every rank's command (no shell)
  std::map<std::string, std::string> env;  // for every rank (the plan's environment, GRPO_RUN_*)
  int nodes = 1;                           // of the plan
  int ranks_per_node = 1;
  // Nodes no attempt may use (run.json's `exclude`): every attempt's srun --exclude carries them,
  // with the nodes excluded after a node loss.
  std::vector<std::string> exclude;
  SupervisorConfig config;
  double poll_s = 0.1;            // longest wait for rank output between checks
  double metrics_interval_s = 5;  // metrics.prom rewrite period
  double end_time_check_s = 60;   // how often the job's end time is asked again
};

// Where the supervisor's progress goes besides the event log: the live progress line and
// metrics.prom (progress.h); a no-op in tests.
class StatusSink {
 public:
  virtual ~StatusSink() = default;
  // The summary after new events, or a periodic tick (`wall` = now).
  virtual void update(const RunSummary& summary, double wall) = 0;
  // The run is over (for this supervisor): final line, final metrics.
  virtual void finish(const RunSummary& summary, double wall) = 0;
};

class NullStatusSink final : public StatusSink {
 public:
  void update(const RunSummary&, double) override {}
  void finish(const RunSummary&, double) override {}
};

struct SupervisorDeps {
  AttemptRunner& runner;
  Clock& clock;
  process::SignalSource& signals;
  JobControl& job;
  StatusSink& status;
  // The newest checkpoint step on disk (external trainers' progress; the attempt's resume step).
  // Default: <run_dir>/checkpoints/step_*/manifest.json (newest_checkpoint_on_disk).
  std::function<std::int64_t()> newest_checkpoint;
  // Checks the nodes an attempt is about to use ({"localhost"} locally) and returns the failed
  // checks (node_health.h); empty function: no health checks. Errors: the check could not run
  // (a warning; the attempt starts anyway).
  std::function<core::Result<std::vector<HealthFinding>>(const std::vector<std::string>&)> health;
  // The export at the end of a run that succeeded when config.export_hf is set (the CLI's
  // app::HfRunExporter). Null: such an export fails (hf_export_failed, exit 86).
  RunExporter* exporter = nullptr;
};

// The newest <run_dir>/checkpoints/step_XXXXXXXX that has a manifest.json (docs/
// checkpoint-format.md), -1 when none. Full verification is the trainer's job.
std::int64_t newest_checkpoint_on_disk(const std::filesystem::path& run_dir);

class Supervisor {
 public:
  // Opens (or creates) <run_dir>/events.jsonl and replays it. Errors: those of
  // EventLogWriter::open and replay (a corrupt log is not silently ignored).
  static core::Result<std::unique_ptr<Supervisor>> open(SupervisorOptions options,
                                                        SupervisorDeps deps);
  // Runs to the end; returns the exit code (restart_policy.h SupervisorExit). Errors only when
  // the event log cannot be written (kIo) or the state machine is violated (kInternal).
  core::Result<int> run();

  const RunSummary& summary() const { return summary_; }

 private:
  Supervisor(SupervisorOptions options, SupervisorDeps deps, EventLogWriter writer,
             RunSummary summary);
  struct Attempt;
  enum class Ending;

  // The one way the run's state changes: appends the event to the log and folds it into
  // summary_ with apply_event, the reducer replay() uses after a requeue.
  core::Status record(const std::string& type, nlohmann::json fields);
  // The micro batch and offload the next attempt runs with: folded from remediation events
  // (0: the trainer's own micro batch).
  int micro_batch() const {
    return summary_.micro_batch.value_or(o_.config.micro_batch.value_or(0));
  }
  bool offload() const { return summary_.offload; }
  core::Status transition(Trigger trigger, const std::string& reason);
  core::Result<Ending> watch(Attempt& a);
  // watch()'s steps, in the order each poll runs them (supervisor_watch.cpp).
  core::Status take_events(Attempt& a);
  core::Status take_signals(Attempt& a, double now);
  core::Status check_step_nodes(Attempt& a, double now);
  core::Status check_disk_progress(Attempt& a, double now);
  core::Status check_hangs(Attempt& a, double now);
  core::Status act_on_failures(Attempt& a, double now);
  core::Status follow_checkpoint_request(Attempt& a, double now);
  core::Status escalate_stop(Attempt& a, double now);
  Ending how_it_ended(Attempt& a);
  // `out.event` (parsed by the runner) is moved from.
  core::Status handle_output(Attempt& a, RankOutput& out);
  core::Status stop_attempt(Attempt& a, bool graceful);
  // Hang attribution (supervisor_hang.cpp): asks every rank of the attempt for its stack
  // (SIGUSR1 to grpo-trainer; eu-stack on a local --trainer-cmd rank) and, once they are in or
  // stack_timeout_s passed, records the `hang_report` event and logs/attempt-<n>/stacks.txt.
  void ask_for_stacks(StackRequest& req, const AttemptSpec& spec);
  core::Status record_hang_report(StackRequest& req, int attempt, const AttemptSpec& spec,
                                  const Hang& hang);
  // A `timeouts_calibrated` event when the calibrated phase limits changed (phase_timeouts.h).
  core::Status record_calibration(const Attempt& a);
  // Node health before attempt `number` on `hosts`: unhealthy nodes get a `node_unhealthy`
  // event and are excluded (Slurm). Returns the exit code when the run cannot go on (84: no
  // node to replace an unhealthy one), else whether nodes were excluded (pick nodes again).
  core::Result<std::variant<int, bool>> check_nodes(int number,
                                                    const std::vector<std::string>& hosts);
  core::Result<int> give_up_before_attempt(int number, const std::string& reason, int code);
  // The run is `succeeded`: the HF export when asked (supervisor_export.cpp), `run_finished`,
  // the final status; returns 0, or 85 when the export failed.
  core::Result<int> finish_succeeded();
  // run()'s steps (supervisor.cpp): the nodes of the next attempt, an ended attempt's root
  // cause and its events, the policy's decision, a restart, a requeue, the run's end.
  std::vector<std::string> attempt_hosts(int nodes) const;
  int available_nodes() const;
  bool is_excluded(const std::string& node) const;
  void exclude(const std::string& node);
  Failure root_cause(const Attempt& a);
  core::Status record_failure(const Attempt& a, const Failure& failure, double duration);
  core::Result<Decision> record_decision(const Attempt& a, const Failure& failure,
                                         const History& prior, const Context& ctx);
  // nullopt: go on with the next attempt; else the exit code (a signal during the backoff).
  core::Result<std::optional<int>> restart(const Restart& r, int number, const History& prior,
                                           const Context& ctx);
  core::Result<int> requeue();
  core::Result<int> finish_run(const char* state, int code);
  core::Status warn(const std::string& kind, const std::string& message);
  core::Status count_warnings();
  core::Result<std::optional<Failure>> check_end_time(double now);
  // Why an attempt that ended as if training were done did not finish it (failure.h's
  // Incomplete), nullopt when it did.
  std::optional<Failure> unfinished(const Attempt& a) const;
  void tick(bool force);
  AttemptSpec make_spec(int attempt, int nodes, std::int64_t resume_step) const;
  int usable_nodes(int available) const;
  Context policy_context(const Attempt& a) const;
  bool embedded() const { return o_.config.contract == TrainerContract::kEmbedded; }

  SupervisorOptions o_;
  SupervisorDeps d_;
  EventLogWriter writer_;
  RunSummary summary_;
  SupervisorTensorBoard tensorboard_;  // restarts and failures for TensorBoard
  RunTimings timings_;
  std::map<PhaseClass, double> recorded_timeouts_;  // the newest timeouts_calibrated's limits
  // The nodes this job's attempts avoid: the run spec's exclusions (o_.exclude, empty outside
  // Slurm) and the nodes excluded since this supervisor started. Not summary_.excluded, the fold
  // of the whole run's log: that lacks the spec's exclusions and holds the nodes earlier jobs of
  // the run excluded, which a requeued job's new allocation need not contain.
  std::vector<std::string> excluded_;
  std::map<std::string, int> warned_at_;
  double last_tick_ = -1e9;
  double last_metrics_ = -1e9;
  double next_end_check_ = 0;
  std::optional<double> end_time_;
  int open_attempt_ = 0;  // an attempt the log shows started but not ended
};

}  // namespace grpo::supervise
