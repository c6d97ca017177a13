// What the supervisor learns from an attempt while it runs, as pure functions and a pure
// per-attempt state (no clock, no I/O: `now` is passed in). docs/supervisor.md, "Detection".
//
//   - hang detection: no heartbeat from a rank for longer than its timeout (formula below);
//   - stragglers: a rank whose compute time per step stays above the other ranks' median;
//   - failure classification: a rank's error telemetry, its exit status, the runner's notes,
//     and the choice of the root cause among several (a crash makes its peers fail too).
//
// Hang timeout of a rank (seconds): the limit of the phase class it is in (phase_timeouts.h:
// startup until its first step event of the attempt, then rollout, update, validation,
// checkpoint or between by its newest heartbeat's phase), fixed by --phase-timeout, calibrated
// from the run's silences, or, while uncalibrated, the default below. With S = the longest step
// wall time (`wall_s`) among the newest 20 step events of the run and C = the longest
// checkpoint write (`seconds` of checkpoint_saved) of the run:
//   T          = --hang-timeout when given, else max(min_s, step_factor * S); startup_s while S
//                is still unknown
//   default    = T; startup: max(T, startup_s); checkpoint: T + max(checkpoint_min_s,
//                checkpoint_factor * C)
//   calibrated = max(floor, factor * longest silence of the class), floor = --hang-timeout when
//                given, else 30 s; checkpoint: 60 s; startup: startup_s
// A rank silent for more than half its timeout makes the run `unhealthy` (a stall).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "grpo/runlog/failure.h"
#include "grpo/supervise/attempt_runner.h"
#include "grpo/supervise/phase_timeouts.h"

namespace grpo::supervise {

struct HangOptions {
  std::optional<double> timeout_s;  // --hang-timeout: T fixed
  double min_s = 30;
  double step_factor = 4;
  double startup_s = 300;  // = the trainer's default trainer.comm_timeout_s (rendezvous bound)
  double first_step_factor = 2;
  double checkpoint_factor = 4;
  double checkpoint_min_s = 60;
  // Without heartbeats (external trainers that send none): a hang is no new checkpoint for this
  // long (nullopt: --hang-timeout when given, else not detected).
  std::optional<double> checkpoint_progress_s;
  PhaseTimeoutOptions phases;
};

struct StragglerOptions {
  double rel_margin = 0.25;    // slower than the others' median by this fraction ...
  double abs_margin_s = 0.05;  // ... and by at least this many seconds ...
  int consecutive = 3;         // ... for this many steps in a row
};

// Timings observed over the whole run (every attempt), for the derived hang timeout.
class RunTimings {
 public:
  void add_step(double wall_s);
  void add_checkpoint(double seconds);
  std::optional<double> longest_step() const;                  // S, nullopt before the first step
  double longest_checkpoint() const { return checkpoint_s_; }  // C, 0 before the first
  // The silences per phase class (calibration of the phase limits).
  PhaseStats& phases() { return phases_; }
  const PhaseStats& phases() const { return phases_; }

 private:
  PhaseStats phases_;
  std::deque<double> steps_;  // newest 20
  double longest_ = 0;        // their maximum
  double checkpoint_s_ = 0;
};

// T of the formula above (steady state).
double steady_hang_timeout(const HangOptions& o, const RunTimings& t);
// The limit of phase class `c` now (formula above).
PhaseLimit phase_timeout(PhaseClass c, const HangOptions& o, const RunTimings& t);
// The calibrated limits now (class -> seconds; the `timeouts_calibrated` event's `limits`).
std::map<PhaseClass, double> calibrated_timeouts(const HangOptions& o, const RunTimings& t);

// A straggler finding (becomes a `straggler` event).
struct Straggler {
  int rank = 0;
  std::int64_t step = 0;
  double compute_s = 0;        // the rank's compute time of that step
  double others_median_s = 0;  // median of the other ranks' compute times
  int steps = 0;               // consecutive slow steps so far
};

// The compute time of a step event: step_s minus comm_s (time blocked in collectives) when the
// trainer reports it, else step_s. In synchronous data parallelism every rank's step_s includes
// waiting for the slowest, so only the compute part tells a straggler apart. nullopt when the
// event has no step_s.
std::optional<double> compute_seconds(const nlohmann::json& step_event);

// Per-attempt monitor of the ranks.
class AttemptMonitor {
 public:
  AttemptMonitor(int world_size, double start_time, HangOptions hang, StragglerOptions straggler,
                 bool heartbeats_required);

  // A trainer event of `rank` at `now` (heartbeat, step, checkpoint_saved, done, ...): updates
  // the rank's liveness, phase and steps; returns a straggler finding when a rank crosses the
  // threshold. `timings` collects step and checkpoint durations for the whole run.
  std::optional<Straggler> observe(int rank, const nlohmann::json& event, double now,
                                   RunTimings& timings);
  // A new checkpoint appeared on disk (progress for trainers without heartbeats).
  void checkpoint_progress(double now) { last_checkpoint_ = now; }

  // The hang timeout of `rank` now (formula in the header comment).
  double timeout_for(int rank, const RunTimings& timings) const;
  // The phase class `rank` is in now.
  PhaseClass phase_class(int rank) const;
  // The ranks silent past their timeout (a Hang), or nullopt.
  std::optional<Hang> check_hang(double now, const RunTimings& timings) const;
  // Some rank is silent for more than half its timeout.
  bool stalled(double now, const RunTimings& timings) const;
  // Every rank has sent a heartbeat or a step in this attempt (launching -> healthy).
  bool all_reported() const;
  // The newest step every rank completed in this attempt (0: none); a rank's `done` counts as
  // its step.
  std::int64_t min_step() const;
  std::int64_t max_step() const;
  bool rank_done(int rank) const;
  bool any_heartbeat() const;

 private:
  struct Rank {
    bool reported = false;  // any heartbeat or step in this attempt
    bool first_step = false;
    int steps = 0;  // step events in this attempt
    double last_beat = 0;
    std::string phase;
    PhaseClass cls = PhaseClass::kBetween;  // phase_class_of(phase), kept with it
    std::int64_t step = 0;
    bool done = false;
    int slow_streak = 0;
    bool straggling = false;
  };
  // Compute seconds of one step per rank (NaN until reported) and how many have reported.
  struct StepCompute {
    std::vector<double> seconds;
    int reported = 0;
  };
  std::optional<Straggler> check_straggler(std::int64_t step);
  PhaseClass class_of(const Rank& r) const;
  // The limit of every phase class now (index: PhaseClass), computed once per check.
  std::array<double, kPhaseClasses> class_limits(const RunTimings& timings) const;
  void mark_reported(Rank& r);

  int world_;
  double start_;
  HangOptions hang_;
  StragglerOptions straggler_;
  bool heartbeats_required_;
  std::vector<Rank> ranks_;
  int reported_ = 0;  // ranks with `reported` set
  // step -> compute seconds per rank; only the newest few are kept.
  std::vector<std::pair<std::int64_t, StepCompute>> compute_;
  double last_checkpoint_;
};

// --- failure classification -------------------------------------------------------------

// How to read exit codes: the embedded grpo-trainer's contract (docs/telemetry.md: 2 config,
// 4 comm, 5 OOM, 7 stopped on request), or any other program (0 or not, signals).
enum class TrainerContract { kEmbedded, kExternal };

// A trainer failure event (OOM_ERROR, COMM_ERROR, IO_ERROR, ERROR, error{code}) of `rank` as a
// Failure; nullopt for any other event.
std::optional<Failure> failure_from_event(int rank, const nlohmann::json& event);

// How a rank ended, as a Failure; nullopt for exit 0, and for exit 7 (stopped on request) when
// `stop_requested`. A SIGKILL with `oom_evidence` is the kernel OOM killer.
std::optional<Failure> failure_from_exit(int rank, const ExitStatus& status,
                                         TrainerContract contract, bool stop_requested,
                                         bool oom_evidence);

// A runner note as a Failure (node failure, cgroup OOM kill, launch failure); nullopt for kInfo.
std::optional<Failure> failure_from_note(const RunnerNote& note);

// Root-cause priority when an attempt yields several failures (a crash makes its peers report
// COMM_ERROR): fatal > preemption > node loss > OOM > hang > crash = incomplete > comm. Higher
// wins; among equals the first one seen.
int failure_priority(const Failure& f);

}  // namespace grpo::supervise
