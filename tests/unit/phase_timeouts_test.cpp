// Per-phase hang timeouts (phase_timeouts.h, docs/supervisor.md "Hang timeout"): the pure rule,
// the monitor's sampling of silences, and the supervisor loop on a fake clock (calibration
// recorded in the event log, a hang reported with its phase, a restarted supervisor continuing
// from the recorded limits). Expected limits are derived by hand in the comments.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "grpo/process/signals.h"
#include "grpo/runlog/event_log.h"
#include "grpo/runlog/run_view.h"
#include "grpo/supervise/event_log_file.h"
#include "grpo/supervise/monitor.h"
#include "grpo/supervise/phase_timeouts.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"

namespace grpo::supervise {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(PhaseTimeouts, TrainerPhasesMapToClasses) {
  EXPECT_EQ(phase_class_of("rollout"), PhaseClass::kRollout);
  EXPECT_EQ(phase_class_of("old_logprob"), PhaseClass::kRollout);
  EXPECT_EQ(phase_class_of("ref_logprob"), PhaseClass::kRollout);
  EXPECT_EQ(phase_class_of("update"), PhaseClass::kUpdate);
  EXPECT_EQ(phase_class_of("sft"), PhaseClass::kUpdate);
  EXPECT_EQ(phase_class_of("validation"), PhaseClass::kValidation);
  EXPECT_EQ(phase_class_of("checkpoint"), PhaseClass::kCheckpoint);
  EXPECT_EQ(phase_class_of("start"), PhaseClass::kBetween);
  EXPECT_EQ(phase_class_of("step"), PhaseClass::kBetween);
  EXPECT_EQ(phase_class_of(""), PhaseClass::kBetween);
  for (const char* n : {"startup", "rollout", "update", "validation", "checkpoint", "between"}) {
    const auto c = parse_phase_class(n);
    ASSERT_TRUE(c) << n;
    EXPECT_EQ(to_string(*c), n);
  }
}

TEST(PhaseTimeouts, FlagParsing) {
  auto ok = parse_phase_timeout("rollout=600");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, PhaseClass::kRollout);
  EXPECT_DOUBLE_EQ(ok->second, 600.0);
  auto spaced = parse_phase_timeout(" checkpoint = 2.5 ");
  ASSERT_TRUE(spaced.ok());
  EXPECT_DOUBLE_EQ(spaced->second, 2.5);
  auto typo = parse_phase_timeout("rolout=60");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("unknown phase 'rolout' (did you mean 'rollout'?)"),
            std::string::npos)
      << typo.error().message;
  for (const char* bad : {"rollout", "rollout=", "rollout=-1", "rollout=0", "rollout=1x",
                          "rollout=nan", "rollout=1e9"}) {
    EXPECT_FALSE(parse_phase_timeout(bad).ok()) << bad;
  }
}

TEST(PhaseTimeouts, LimitIsFixedCalibratedOrDefault) {
  PhaseTimeoutOptions o;  // factor 4, 3 samples
  PhaseStats st;
  // No samples: the default.
  EXPECT_DOUBLE_EQ(phase_limit(PhaseClass::kUpdate, o, st, 30, 77).seconds, 77);
  EXPECT_EQ(phase_limit(PhaseClass::kUpdate, o, st, 30, 77).source, LimitSource::kDefault);
  st.add(PhaseClass::kUpdate, 9);
  st.add(PhaseClass::kUpdate, 12);
  // Two samples: still the default.
  EXPECT_DOUBLE_EQ(phase_limit(PhaseClass::kUpdate, o, st, 30, 77).seconds, 77);
  st.add(PhaseClass::kUpdate, 10);
  // Three: max(30, 4 x 12) = 48.
  const PhaseLimit l = phase_limit(PhaseClass::kUpdate, o, st, 30, 77);
  EXPECT_DOUBLE_EQ(l.seconds, 48);
  EXPECT_EQ(l.source, LimitSource::kCalibrated);
  // The floor wins over a small product: max(60, 48) = 60.
  EXPECT_DOUBLE_EQ(phase_limit(PhaseClass::kUpdate, o, st, 60, 77).seconds, 60);
  // Start-up calibrates from one sample (one per attempt): max(300, 4 x 100) = 400.
  st.add(PhaseClass::kStartup, 100);
  EXPECT_DOUBLE_EQ(phase_limit(PhaseClass::kStartup, o, st, 300, 300).seconds, 400);
  // A fixed limit wins over everything.
  o.fixed[PhaseClass::kUpdate] = 5;
  EXPECT_DOUBLE_EQ(phase_limit(PhaseClass::kUpdate, o, st, 30, 77).seconds, 5);
  EXPECT_EQ(phase_limit(PhaseClass::kUpdate, o, st, 30, 77).source, LimitSource::kFixed);
  // Nonsense samples are ignored.
  PhaseStats st2;
  st2.add(PhaseClass::kRollout, -1);
  st2.add(PhaseClass::kRollout, std::numeric_limits<double>::infinity());
  EXPECT_EQ(st2.samples(PhaseClass::kRollout), 0);
}

TEST(PhaseTimeouts, StatsRestoreFromTheRecordedEvent) {
  // A timeouts_calibrated event as docs/events.md shows it (written by hand, not by to_json).
  const json e = json::parse(R"({"type":"timeouts_calibrated",
    "longest_s":{"update":0.6,"rollout":0.2,"bogus":3,"between":"x"},
    "samples":{"update":14,"rollout":14,"bogus":1},
    "limits":{"update":2.4,"rollout":1.5}})");
  PhaseStats st;
  st.restore(e);
  EXPECT_DOUBLE_EQ(st.longest(PhaseClass::kUpdate).value_or(-1), 0.6);
  EXPECT_EQ(st.samples(PhaseClass::kUpdate), 14);
  EXPECT_DOUBLE_EQ(st.longest(PhaseClass::kRollout).value_or(-1), 0.2);
  EXPECT_FALSE(st.longest(PhaseClass::kBetween));  // malformed: skipped
  const json back = st.to_json();
  EXPECT_EQ(back["longest_s"], json::parse(R"({"rollout":0.2,"update":0.6})"));
  EXPECT_EQ(back["samples"], json::parse(R"({"rollout":14,"update":14})"));
}

TEST(PhaseTimeouts, RecordedAgainOnlyWhenNewOrTenPercentLonger) {
  using M = std::map<PhaseClass, double>;
  EXPECT_FALSE(calibration_changed({}, {}));
  EXPECT_TRUE(calibration_changed({}, M{{PhaseClass::kUpdate, 30}}));
  EXPECT_FALSE(calibration_changed(M{{PhaseClass::kUpdate, 30}}, M{{PhaseClass::kUpdate, 32.9}}));
  EXPECT_TRUE(calibration_changed(M{{PhaseClass::kUpdate, 30}}, M{{PhaseClass::kUpdate, 33}}));
  EXPECT_TRUE(calibration_changed(M{{PhaseClass::kUpdate, 30}},
                                  M{{PhaseClass::kUpdate, 30}, {PhaseClass::kRollout, 30}}));
}

// The monitor samples silences per class, skips warm-up, and names the phase of a hang.
TEST(PhaseTimeouts, MonitorSamplesSilencesAndReportsThePhase) {
  HangOptions o;
  o.timeout_s = 1.5;  // floor of calibrated step phases and their default
  RunTimings t;
  AttemptMonitor m(1, 0.0, o, StragglerOptions{}, true);
  const auto beat = [&](double now, std::int64_t s, const char* phase) {
    m.observe(0, {{"type", "heartbeat"}, {"step", s}, {"phase", phase}}, now, t);
  };
  const auto step = [&](double now, std::int64_t s) {
    m.observe(0, {{"type", "step"}, {"step", s}, {"wall_s", 1.0}}, now, t);
  };
  // Before the first step: start-up, max(1.5, startup_s 300) = 300 (uncalibrated).
  EXPECT_EQ(m.phase_class(0), PhaseClass::kStartup);
  EXPECT_DOUBLE_EQ(m.timeout_for(0, t), 300);
  // Steps s = 1..6 of 1 s each, starting at s - 1: start +0, rollout +0.1 (between 0.1),
  // update +0.3 (rollout 0.2), step +0.9 (update 0.6); then between 0.1 to the next start.
  for (int s = 1; s <= 6; ++s) {
    const double b = s - 1;
    beat(b, s, "start");
    beat(b + 0.1, s, "rollout");
    beat(b + 0.3, s, "update");
    step(b + 0.9, s);
  }
  // Start-up samples: 0 (attempt start to the first beat), 0.1, 0.2, 0.6: one class, longest 0.6.
  EXPECT_DOUBLE_EQ(t.phases().longest(PhaseClass::kStartup).value_or(-1), 0.6);
  // Steps 1 (start-up) and 2 (warm-up) give no step-phase samples; steps 3..6 give 4 each of
  // rollout and update; between: the gaps after steps 2..5 (the rank has 2 steps done when the
  // one after step 2 ends) and the start phases of steps 3..6, 8 in all.
  EXPECT_EQ(t.phases().samples(PhaseClass::kRollout), 4);
  EXPECT_EQ(t.phases().samples(PhaseClass::kUpdate), 4);
  EXPECT_EQ(t.phases().samples(PhaseClass::kBetween), 8);
  EXPECT_NEAR(t.phases().longest(PhaseClass::kUpdate).value_or(-1), 0.6, 1e-9);
  // Calibrated: update max(1.5, 4 x 0.6) = 2.4; rollout max(1.5, 4 x 0.2) = 1.5;
  // start-up max(300, 4 x 0.6) = 300; checkpoint: none seen, default T + max(60, 4 x 0) =
  // 1.5 + 60.
  const auto cal = calibrated_timeouts(o, t);
  EXPECT_NEAR(cal.at(PhaseClass::kUpdate), 2.4, 1e-9);
  EXPECT_DOUBLE_EQ(cal.at(PhaseClass::kRollout), 1.5);
  EXPECT_DOUBLE_EQ(cal.at(PhaseClass::kStartup), 300);
  EXPECT_EQ(cal.count(PhaseClass::kCheckpoint), 0u);
  EXPECT_DOUBLE_EQ(phase_timeout(PhaseClass::kCheckpoint, o, t).seconds, 61.5);
  // Step 7 hangs in update (entered at 6.3).
  beat(6.0, 7, "start");
  beat(6.1, 7, "rollout");
  beat(6.3, 7, "update");
  EXPECT_EQ(m.phase_class(0), PhaseClass::kUpdate);
  EXPECT_FALSE(m.check_hang(6.3 + 2.3, t));
  EXPECT_TRUE(m.stalled(6.3 + 1.3, t));  // past half the limit
  const auto h = m.check_hang(6.3 + 2.5, t);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->phase, "update");
  EXPECT_EQ(h->trainer_phase, "update");
  EXPECT_NEAR(h->timeout_s, 2.4, 1e-9);
  EXPECT_EQ(describe(Failure{*h}),
            "rank(s) 0 hung in update: no heartbeat for 2.5 s (timeout 2.4 s)");
}

// --- the supervisor loop ------------------------------------------------------------------

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("grpo-phase-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// 2 ranks, steps from+1..10 of 1 s with the phases of the monitor test above; with `hang_step`,
// every rank falls silent after its update heartbeat of that step (rank 1 hung, rank 0 waiting
// in the collective).
SimAttempt phased(std::int64_t from, std::int64_t hang_step = -1) {
  SimAttempt a;
  const double t0 = 0.5;
  for (int r = 0; r < 2; ++r) sim_emit(a, t0, r, {{"type", "start"}, {"rank", r}});
  for (std::int64_t s = from + 1; s <= 10; ++s) {
    const double b = t0 + static_cast<double>(s - from - 1) + 0.001;
    for (int r = 0; r < 2; ++r) {
      sim_emit(a, b, r, {{"type", "heartbeat"}, {"step", s}, {"phase", "start"}, {"rank", r}});
      sim_emit(a, b + 0.1, r,
               {{"type", "heartbeat"}, {"step", s}, {"phase", "rollout"}, {"rank", r}});
      sim_emit(a, b + 0.3, r,
               {{"type", "heartbeat"}, {"step", s}, {"phase", "update"}, {"rank", r}});
    }
    if (s == hang_step) return a;
    for (int r = 0; r < 2; ++r) {
      sim_emit(a, b + 0.9, r,
               {{"type", "step"}, {"step", s}, {"rank", r}, {"step_s", 0.9}, {"wall_s", 0.9}});
    }
  }
  const double end = t0 + static_cast<double>(10 - from);
  for (int r = 0; r < 2; ++r) {
    sim_emit(a, end, r, {{"type", "done"}, {"step", 10}, {"rank", r}});
    a.actions.push_back(SimAction{end + 0.01, r, SimExit{Exited{0}}});
  }
  return a;
}

struct Loop {
  FakeClock clock;
  SimulatedRunner runner{clock};
  process::FakeSignals signals;
  FakeJobControl job;
  NullStatusSink status;
  fs::path dir;
  SupervisorOptions opts;
  std::unique_ptr<Supervisor> sup;

  explicit Loop(const std::string& name) : dir(temp_dir(name)) {
    job.slurm = false;
    opts.run_dir = dir;
    opts.trainer_argv = {"grpo-trainer"};
    opts.ranks_per_node = 2;
    opts.config.total_steps = 10;
    opts.config.hang.timeout_s = 1.5;
    opts.config.budget.backoff_base_s = 1;
  }
  ~Loop() { fs::remove_all(dir); }
  int run() {
    SupervisorDeps deps{runner, clock, signals, job, status, [] { return std::int64_t{-1}; },
                        nullptr};
    auto opened = Supervisor::open(opts, deps);
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().str());
    if (!opened.ok()) return -1;
    sup = std::move(opened).value();
    auto code = sup->run();
    EXPECT_TRUE(code.ok()) << (code.ok() ? "" : code.error().str());
    return code.ok() ? code.value() : -1;
  }
  std::vector<json> of(const std::string& type) const {
    std::vector<json> out;
    auto log = read_event_log(dir / "events.jsonl");
    EXPECT_TRUE(log.ok());
    if (!log.ok()) return out;
    for (auto& e : log->events) {
      if (e["type"] == type) out.push_back(e);
    }
    return out;
  }
};

TEST(PhaseTimeoutsLoop, CalibratedRecordedReportedAndReplayed) {
  Loop l("replay");
  l.opts.config.budget.max_restarts = 0;  // the hang ends this supervisor (exit 80)
  l.runner.push(phased(0, 7));
  EXPECT_EQ(l.run(), kExitRestartBudget);
  // Calibration recorded: update max(1.5, 4 x 0.6) = 2.4 (the monitor test's derivation).
  const auto cal = l.of("timeouts_calibrated");
  ASSERT_FALSE(cal.empty());
  EXPECT_NEAR(cal.back()["limits"]["update"].get<double>(), 2.4, 1e-6);
  EXPECT_DOUBLE_EQ(cal.back()["limits"]["rollout"].get<double>(), 1.5);
  EXPECT_NEAR(cal.back()["longest_s"]["update"].get<double>(), 0.6, 1e-6);
  // Recorded when it changes, not per event: once per class as it gets calibrated (startup at
  // its first sample; between, rollout, update at their third), never again (nothing grows).
  EXPECT_EQ(cal.size(), 4u);
  // The hang, in update, detected at the calibrated limit (poll 0.1 s).
  auto f = l.of("failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]["class"], "hang");
  EXPECT_EQ(f[0]["phase"], "update");
  EXPECT_EQ(f[0]["trainer_phase"], "update");
  EXPECT_NEAR(f[0]["timeout_s"].get<double>(), 2.4, 1e-6);
  EXPECT_GE(f[0]["silent_s"].get<double>(), 2.4);
  EXPECT_LE(f[0]["silent_s"].get<double>(), 2.4 + 2 * l.opts.poll_s);
  const std::string text = render_status(l.sup->summary(), l.dir.string(), l.clock.wall());
  EXPECT_NE(text.find("attempt 1: hang in update"), std::string::npos) << text;
  EXPECT_NE(text.find("update 2.4 s"), std::string::npos) << text;

  // A second supervisor on the same run (as after a requeue) starts from the recorded limits:
  // its attempt hangs in update at step 2, still warm-up (no new samples), and the limit is the
  // recorded 2.4 s, not the uncalibrated 1.5 s.
  l.sup.reset();
  l.opts.config.budget.max_restarts = 3;
  l.runner.push(phased(0, 2));
  l.runner.push(phased(0));
  EXPECT_EQ(l.run(), kExitSucceeded);
  f = l.of("failure");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1]["phase"], "update");
  EXPECT_NEAR(f[1]["timeout_s"].get<double>(), 2.4, 1e-6);
}

TEST(PhaseTimeoutsLoop, FixedLimitWinsAndStartupHangIsNamed) {
  Loop l("fixed");
  l.opts.config.hang.phases.fixed[PhaseClass::kStartup] = 4;
  l.opts.config.hang.phases.fixed[PhaseClass::kUpdate] = 1.0;
  l.opts.config.budget.max_restarts = 0;
  // Hangs in update at step 1: still start-up (no step event yet), fixed at 4 s.
  l.runner.push(phased(0, 1));
  EXPECT_EQ(l.run(), kExitRestartBudget);
  const auto f = l.of("failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]["phase"], "startup");
  EXPECT_EQ(f[0]["trainer_phase"], "update");
  EXPECT_DOUBLE_EQ(f[0]["timeout_s"].get<double>(), 4.0);
  EXPECT_NE(f[0]["description"].get<std::string>().find("hung in startup (update)"),
            std::string::npos);
}

}  // namespace
}  // namespace grpo::supervise
