// The simulated runner: plays a failure script per attempt against a FakeClock, so the whole
// supervisor loop is unit-tested without processes or sleeps (principle 2; flux-core's
// testexec). A script says what each rank emits, when it hangs (falls silent) and when and how
// it exits; a few rules say how the simulated ranks answer signals (a checkpoint on SIGUSR2,
// exit 7 on SIGTERM, SIGKILL on kill()).
#pragma once

#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>
#include <vector>

#include "grpo/supervise/attempt_runner.h"
#include "grpo/test_support/fake_clock.h"

namespace grpo::supervise {

struct SimEmit {
  nlohmann::json event;  // written by the rank as one JSONL line (type, fields)
};
struct SimExit {
  ExitStatus status;
  bool oom_killed = false;
};
struct SimAction {
  double at = 0;  // seconds after start()
  int rank = 0;
  std::variant<SimEmit, SimExit, RunnerNote> what;
};

struct SimAttempt {
  std::vector<SimAction> actions;          // any order; played by time, then by position
  std::optional<core::Error> start_error;  // start() fails with this
  // SIGUSR2: rank 0 reports checkpoint_saved{step: newest step, reason: request} this long
  // after the signal (nullopt: the ranks ignore it).
  std::optional<double> checkpoint_on_usr2 = 0.5;
  // SIGTERM: every rank exits with `on_term` this long after the signal (nullopt: ignored).
  std::optional<double> term_delay = 0.1;
  ExitStatus on_term = Exited{7};
  // SIGUSR1 (hang attribution): each listed rank still running reports this `stack` event this
  // long after the signal; unlisted ranks do not answer.
  std::map<int, nlohmann::json> stack_on_usr1;
  double stack_delay = 0.2;
};

// A healthy run of the embedded trainer from step `from` (exclusive) to `total`: every rank
// sends start and a heartbeat at once, then per step a heartbeat and a step event
// (step_s = wall_s = `step_s`); rank 0 saves a checkpoint every `save_freq` steps and at the
// end; at `total` every rank sends done and exits 0. Times start at `t0`.
SimAttempt sim_trainer(int world, std::int64_t from, std::int64_t total, double step_s,
                       int save_freq, double t0 = 0.5);
// Cuts `rank`'s script at the start of step `step` (after its heartbeat of that step) and makes
// it exit with `status` there, like a crash; with nullopt it falls silent instead (a hang).
// Other ranks stop at the same step without exiting (they wait in a collective).
void sim_fault(SimAttempt& a, int rank, std::int64_t step, std::optional<ExitStatus> status,
               double extra_s = 0.01);
// Adds an event of `rank` at time `at`.
void sim_emit(SimAttempt& a, double at, int rank, nlohmann::json event);

class SimulatedRunner final : public AttemptRunner {
 public:
  explicit SimulatedRunner(FakeClock& clock) : clock_(clock) {}
  void push(SimAttempt attempt) { script_.push_back(std::move(attempt)); }

  std::string_view kind() const override { return "simulated"; }
  core::Status start(const AttemptSpec& spec) override;
  core::Result<std::vector<AttemptEvent>> poll(double timeout_s) override;
  core::Status signal(int sig) override;
  core::Status kill() override;
  bool active() const override { return active_; }
  std::vector<std::string> nodes() const override;

  const std::vector<AttemptSpec>& started() const { return started_; }
  // (attempt, signal) in order; kill() records 9.
  const std::vector<std::pair<int, int>>& signals() const { return signals_; }

 private:
  struct Pending {
    double at;  // absolute (clock) time
    int rank;
    std::variant<SimEmit, SimExit, RunnerNote> what;
    std::size_t order;
  };
  void finish_if_all_gone(std::vector<AttemptEvent>& out);

  FakeClock& clock_;
  std::deque<SimAttempt> script_;
  std::vector<AttemptSpec> started_;
  std::vector<std::pair<int, int>> signals_;
  std::vector<Pending> pending_;
  std::vector<bool> alive_;
  std::optional<ExitStatus> first_bad_;
  SimAttempt current_;
  bool active_ = false;
  std::size_t order_ = 0;
  std::int64_t newest_step_ = 0;
};

}  // namespace grpo::supervise
