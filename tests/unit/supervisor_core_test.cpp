// The supervisor's pure core: the transition table, the restart policy over every failure class,
// and event-log replay.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "grpo/runlog/event_log.h"
#include "grpo/runlog/restart_policy.h"
#include "grpo/runlog/run_view.h"
#include "grpo/runlog/state_machine.h"
#include "grpo/supervise/event_log_file.h"
#include "grpo/supervise/monitor.h"

namespace grpo::supervise {
namespace {

using nlohmann::json;

TEST(StateMachine, EveryTransitionOfTheTableAndNothingElse) {
  const std::vector<RunState> states = {
      RunState::kLaunching,  RunState::kHealthy,   RunState::kUnhealthy, RunState::kStopping,
      RunState::kRestarting, RunState::kSucceeded, RunState::kFailed,    RunState::kRequeued};
  const std::vector<Trigger> triggers = {
      Trigger::kLaunch,  Trigger::kProgress,   Trigger::kStall,
      Trigger::kFailure, Trigger::kPreemption, Trigger::kCompleted,
      Trigger::kRestart, Trigger::kGiveUp,     Trigger::kRequeue};
  int legal = 0;
  for (auto from : states) {
    for (auto t : triggers) {
      const auto next = next_state(from, t);
      if (next.ok()) ++legal;
      if (is_terminal(from)) {
        EXPECT_FALSE(next.ok()) << to_string(from) << " is terminal";
      }
    }
  }
  EXPECT_EQ(legal, static_cast<int>(transition_table().size()));
  EXPECT_EQ(next_state(RunState::kLaunching, Trigger::kProgress).value(), RunState::kHealthy);
  EXPECT_EQ(next_state(RunState::kHealthy, Trigger::kFailure).value(), RunState::kStopping);
  EXPECT_EQ(next_state(RunState::kStopping, Trigger::kRestart).value(), RunState::kRestarting);
  EXPECT_EQ(next_state(RunState::kRestarting, Trigger::kLaunch).value(), RunState::kLaunching);
  EXPECT_EQ(next_state(RunState::kStopping, Trigger::kRequeue).value(), RunState::kRequeued);
  EXPECT_FALSE(
      next_state(RunState::kHealthy, Trigger::kRestart).ok());  // restart only after stopping
  for (auto s : states) EXPECT_EQ(parse_run_state(to_string(s)).value(), s);
  for (auto t : triggers) EXPECT_EQ(parse_trigger(to_string(t)).value(), t);
}

History failed(int n, bool progress = false) {
  History h;
  for (int i = 1; i <= n; ++i) {
    AttemptRecord a;
    a.attempt = i;
    a.failure_class = "crash";
    a.spent_budget = true;
    a.checkpoint_step_at_start = progress ? i * 10 : 10;
    a.checkpoint_step_at_end = progress ? i * 10 + 10 : 10;
    h.attempts.push_back(a);
  }
  return h;
}

TEST(RestartPolicy, CrashHangAndCommFailuresSpendTheBudgetWithBackoff) {
  Budget b;
  b.max_restarts = 3;
  b.backoff_base_s = 2;
  b.backoff_max_s = 5;
  b.no_progress_restarts = 10;
  for (const Failure& f : std::vector<Failure>{RankCrash{1, 137, 9, ""}, Hang{{0}, 31, 30, "", ""},
                                               CommFailure{0, "gloo timeout"}}) {
    const auto d0 = decide(f, failed(0), b, {});
    ASSERT_TRUE(std::holds_alternative<Restart>(d0)) << failure_class(f);
    EXPECT_TRUE(std::get<Restart>(d0).spends_budget);
    EXPECT_DOUBLE_EQ(std::get<Restart>(d0).delay_s, 2);
    const auto d2 = decide(f, failed(2, true), b, {});
    EXPECT_DOUBLE_EQ(std::get<Restart>(d2).delay_s, 5);  // 2 * 2^2 = 8, capped at 5
    // The failed attempt wrote a new checkpoint first: a new series, the base delay again.
    Context progressed;
    progressed.made_progress = true;
    const auto dp = decide(f, failed(2, true), b, progressed);
    EXPECT_DOUBLE_EQ(std::get<Restart>(dp).delay_s, 2);
    const auto d3 = decide(f, failed(3, true), b, {});
    ASSERT_TRUE(std::holds_alternative<GiveUp>(d3));
    EXPECT_EQ(std::get<GiveUp>(d3).exit_code, kExitRestartBudget);
  }
}

TEST(RestartPolicy, NoNewCheckpointAcrossKRestartsStopsForGood) {
  Budget b;
  b.max_restarts = 10;
  b.no_progress_restarts = 3;
  EXPECT_TRUE(std::holds_alternative<Restart>(decide(RankCrash{}, failed(2), b, {})));
  const auto d = decide(RankCrash{}, failed(3), b, {});
  ASSERT_TRUE(std::holds_alternative<GiveUp>(d));
  EXPECT_EQ(std::get<GiveUp>(d).exit_code, kExitNoProgress);
  // With progress between the failures the same count of restarts goes on.
  EXPECT_TRUE(std::holds_alternative<Restart>(decide(RankCrash{}, failed(3, true), b, {})));
}

TEST(RestartPolicy, PreemptionNeverSpendsTheBudget) {
  Budget b;
  b.max_restarts = 0;
  Context slurm;
  slurm.under_slurm = true;
  EXPECT_TRUE(std::holds_alternative<Requeue>(decide(Preemption{"USR2"}, failed(5), b, slurm)));
  const auto local = decide(Preemption{"SIGTERM"}, failed(0), b, {});
  ASSERT_TRUE(std::holds_alternative<GiveUp>(local));
  EXPECT_EQ(std::get<GiveUp>(local).exit_code, kExitInterrupted);
}

TEST(RestartPolicy, NodeLossExcludesTheNodeOrRequeues) {
  Budget b;
  b.max_restarts = 0;  // membership changes do not need budget
  Context c;
  c.under_slurm = true;
  c.nodes = 4;
  c.min_nodes = 2;
  const auto d = decide(NodeLoss{"n3"}, failed(0), b, c);
  ASSERT_TRUE(std::holds_alternative<Restart>(d));
  EXPECT_FALSE(std::get<Restart>(d).spends_budget);
  EXPECT_EQ(std::get<Restart>(d).exclude, std::vector<std::string>{"n3"});
  c.nodes = 2;
  EXPECT_TRUE(std::holds_alternative<Requeue>(decide(NodeLoss{"n1"}, failed(0), b, c)));
  c.under_slurm = false;
  const auto gone = decide(NodeLoss{"n1"}, failed(0), b, c);
  ASSERT_TRUE(std::holds_alternative<GiveUp>(gone));
  // Its own code, not the restart budget's: no budget was spent.
  EXPECT_EQ(std::get<GiveUp>(gone).exit_code, kExitNodesLost);
  EXPECT_NE(std::get<GiveUp>(gone).exit_code, kExitRestartBudget);
  EXPECT_NE(std::get<GiveUp>(gone).reason.find("node n1 lost"), std::string::npos);
}

TEST(RestartPolicy, OomHalvesTheMicroBatchThenOffloadsThenGivesUp) {
  Budget b;
  Context c;
  c.micro_batch = 8;
  c.offload_supported = true;
  const auto d1 = decide(OutOfMemory{0, "trainer", "update", 1 << 30}, failed(0), b, c);
  ASSERT_TRUE(std::holds_alternative<Restart>(d1));
  ASSERT_TRUE(std::get<Restart>(d1).remediation);
  EXPECT_EQ(std::get<Restart>(d1).remediation->micro_batch, 4);
  c.micro_batch = 1;
  const auto d2 = decide(OutOfMemory{0, "kernel", "", std::nullopt}, failed(1, true), b, c);
  ASSERT_TRUE(std::holds_alternative<Restart>(d2));
  EXPECT_EQ(std::get<Restart>(d2).remediation->offload, true);
  c.offload = true;
  const auto d3 = decide(OutOfMemory{0, "slurm", "", std::nullopt}, failed(2, true), b, c);
  ASSERT_TRUE(std::holds_alternative<GiveUp>(d3));
  EXPECT_EQ(std::get<GiveUp>(d3).exit_code, kExitOomUnremediable);
}

TEST(RestartPolicy, FatalErrorsAreNotRetried) {
  const auto d = decide(FatalError{2, "unknown key"}, failed(0), Budget{}, {});
  ASSERT_TRUE(std::holds_alternative<GiveUp>(d));
  EXPECT_EQ(std::get<GiveUp>(d).exit_code, kExitFatal);
  EXPECT_EQ(decision_kind(d), "give_up");
}

// A full file system is not retried: a restart would fail the same way until someone frees
// space. No budget is spent (nothing was wrong with the training), whatever budget is left.
TEST(RestartPolicy, DiskFullGivesUpWithoutSpendingTheBudget) {
  const auto d =
      decide(DiskFull{0, "cannot write x: No space left on device"}, failed(0), Budget{}, {});
  ASSERT_TRUE(std::holds_alternative<GiveUp>(d));
  EXPECT_EQ(std::get<GiveUp>(d).exit_code, kExitDiskFull);
  EXPECT_EQ(failure_class(Failure{DiskFull{}}), "disk_full");
  EXPECT_NE(std::get<GiveUp>(d).reason.find("No space left on device"), std::string::npos);
}

// The trainer's IO_ERROR says whether the write failed for lack of space (docs/telemetry.md).
TEST(Classify, IoErrorWithNoSpaceIsDiskFullOtherwiseACrash) {
  const auto full = failure_from_event(
      0, json{{"type", "IO_ERROR"}, {"message", "checkpoint failed"}, {"no_space", true}});
  ASSERT_TRUE(full);
  EXPECT_EQ(failure_class(*full), "disk_full");
  const auto other = failure_from_event(
      1, json{{"type", "IO_ERROR"}, {"message", "permission denied"}, {"no_space", false}});
  ASSERT_TRUE(other);
  EXPECT_EQ(failure_class(*other), "crash");
}

json event(std::int64_t seq, double time, const std::string& type, json fields = json::object()) {
  fields["schema"] = kEventSchema;
  fields["seq"] = seq;
  fields["time"] = time;
  fields["type"] = type;
  return fields;
}

std::vector<json> sample_log() {
  return {
      event(0, 100, ev::kRunStarted, {{"total_steps", 40}}),
      event(1, 100, ev::kAttemptStarted, {{"attempt", 1}, {"resume_step", -1}}),
      event(2, 101, ev::kState,
            {{"from", "launching"}, {"to", "healthy"}, {"trigger", "progress"}}),
      event(3, 110, ev::kStep, {{"step", 10}}),
      event(4, 111, ev::kCheckpointSaved, {{"step", 10}}),
      event(5, 115, ev::kStep, {{"step", 12}}),
      event(6, 116, ev::kFailure,
            {{"class", "crash"}, {"description", "rank 1 killed by signal 9"}}),
      event(7, 116, ev::kState, {{"from", "healthy"}, {"to", "stopping"}, {"trigger", "failure"}}),
      event(8, 117, ev::kDecision,
            {{"kind", "restart"}, {"spends_budget", true}, {"reason", "crash"}}),
      event(9, 117, ev::kState,
            {{"from", "stopping"}, {"to", "restarting"}, {"trigger", "restart"}}),
      event(10, 118, ev::kAttemptStarted, {{"attempt", 2}, {"resume_step", 10}}),
      event(11, 118, ev::kState,
            {{"from", "restarting"}, {"to", "launching"}, {"trigger", "launch"}}),
      event(12, 119, ev::kCheckpointLoaded, {{"step", 10}}),
      event(13, 121, ev::kStep, {{"step", 11}}),
      event(14, 124, ev::kStep, {{"step", 13}}),
      event(15, 124, ev::kOomError, {{"step", 13}}),
  };
}

TEST(EventLog, ReplayRebuildsTheSupervisorState) {
  const auto s = replay(sample_log()).value();
  EXPECT_EQ(s.state, RunState::kLaunching);
  EXPECT_EQ(s.attempt, 2);
  ASSERT_EQ(s.history.attempts.size(), 2u);
  EXPECT_EQ(s.history.restarts_spent(), 1);
  EXPECT_EQ(s.history.attempts[0].failure_class, "crash");
  EXPECT_EQ(s.history.attempts[0].checkpoint_step_at_end, 10);
  EXPECT_EQ(s.latest_checkpoint_step, 10);
  EXPECT_EQ(s.last_step, 13);
  EXPECT_EQ(s.total_steps, 40);
  EXPECT_EQ(s.failures.at("crash"), 1);
  EXPECT_EQ(s.restarts, 1);
  EXPECT_EQ(s.oom_events, 1);
  // Goodput, by hand: the checkpoint of t=111 (no blocking_s or seconds: 0 s blocked); step 12
  // at t=115 is the last before the failure at t=116: recomputed 115 - 111 = 4 s, detection
  // 116 - 115 = 1 s; the restart runs from 116 to the start of attempt 2's first step, at 121
  // (no wall_s: the step's own time is not known and counts as restart): 5 s. Total 10 s.
  EXPECT_DOUBLE_EQ(s.goodput.recomputed_s, 4.0);
  EXPECT_DOUBLE_EQ(s.goodput.detection_s, 1.0);
  EXPECT_DOUBLE_EQ(s.goodput.restart_s, 5.0);
  EXPECT_DOUBLE_EQ(s.goodput.checkpoint_s, 0.0);
  EXPECT_DOUBLE_EQ(s.goodput.lost(), 10.0);
  EXPECT_FALSE(s.goodput.restart_since);
}

// Every cause once, with step times, a blocking checkpoint, a failure during the recovery, and
// a requeue. Derivation in the comments; wall time 100 -> 200.
TEST(EventLog, GoodputSplitsTheLostTimeByCause) {
  const std::vector<json> log = {
      event(0, 100, ev::kRunStarted, {{"total_steps", 40}}),
      event(1, 100, ev::kAttemptStarted, {{"attempt", 1}}),
      event(2, 110, ev::kStep, {{"step", 1}, {"rank", 0}, {"wall_s", 2.0}}),
      event(3, 110, ev::kStep, {{"step", 1}, {"rank", 1}, {"wall_s", 9.0}}),  // not rank 0
      // Saved at 112, the loop blocked 0.5 s: checkpoint 0.5 s; work counts from 112.
      event(4, 112, ev::kCheckpointSaved, {{"step", 1}, {"blocking_s", 0.5}, {"seconds", 3.0}}),
      event(5, 120, ev::kStep, {{"step", 2}, {"rank", 0}, {"wall_s", 2.0}}),
      // Failure at 126: recomputed 120 - 112 = 8, detection 126 - 120 = 6; restart from 126.
      event(6, 126, ev::kFailure, {{"class", "hang"}}),
      event(7, 127, ev::kAttemptStarted, {{"attempt", 2}}),
      event(8, 130, ev::kFailure, {{"class", "crash"}}),  // still recovering: nothing new
      event(9, 131, ev::kAttemptStarted, {{"attempt", 3}}),
      // First step of attempt 3 at 140 took 4 s: the restart ends at 136: 136 - 126 = 10.
      event(10, 140, ev::kStep, {{"step", 2}, {"rank", 0}, {"wall_s", 4.0}}),
      // Requeued at 150 (the time limit): the restart since nothing; the queue from 150.
      event(11, 150, ev::kRunFinished, {{"state", "requeued"}, {"exit_code", 75}}),
      // The new supervisor starts at 170: requeue 20 s; its launch until the first step (the
      // step at 180 took 5 s: until 175) is restart: 5 s more, 15 s in all.
      event(12, 170, ev::kRunStarted, {{"total_steps", 40}}),
      event(13, 171, ev::kAttemptStarted, {{"attempt", 4}}),
      event(14, 180, ev::kStep, {{"step", 3}, {"rank", 0}, {"wall_s", 5.0}}),
      event(15, 200, ev::kStep, {{"step", 4}, {"rank", 0}, {"wall_s", 5.0}}),
  };
  const auto s = replay(log).value();
  const Goodput& g = s.goodput;
  EXPECT_DOUBLE_EQ(g.checkpoint_s, 0.5);
  EXPECT_DOUBLE_EQ(g.recomputed_s, 8.0);
  EXPECT_DOUBLE_EQ(g.detection_s, 6.0);
  EXPECT_DOUBLE_EQ(g.restart_s, 15.0);
  EXPECT_DOUBLE_EQ(g.requeue_s, 20.0);
  // Lost 49.5 of 100 s: effective 50.5 %.
  EXPECT_DOUBLE_EQ(g.lost(), 49.5);
  EXPECT_NEAR(effective_ratio(s, 200), 0.505, 1e-12);
}

TEST(EventLog, WriterAppendsWholeLinesAndContinuesSeqAfterATornLine) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("grpo-evlog-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "events.jsonl";
  {
    auto w = EventLogWriter::open(path).value();
    ASSERT_TRUE(w.append(ev::kRunStarted, {{"total_steps", 5}}, 1.0).ok());
    ASSERT_TRUE(w.append(ev::kWarning, {{"message", "x"}}, 2.0).ok());
  }
  std::ofstream(path, std::ios::app) << R"({"schema":1,"seq":2,"ty)";  // a writer died mid-line
  auto contents = read_event_log(path).value();
  EXPECT_TRUE(contents.torn);
  EXPECT_EQ(contents.events.size(), 2u);
  {
    auto w = EventLogWriter::open(path).value();
    EXPECT_EQ(w.next_seq(), 2);
    ASSERT_TRUE(w.append(ev::kRunFinished, {{"exit_code", 0}}, 3.0).ok());
  }
  // The torn fragment was cut off: the log reads back whole, so a supervisor restarted after
  // dying mid-write can replay it.
  auto again = read_event_log(path);
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_FALSE(again->torn);
  ASSERT_EQ(again->events.size(), 3u);
  EXPECT_EQ(again->events[2]["type"], ev::kRunFinished);
  EXPECT_EQ(again->events[2]["seq"], 2);
  std::filesystem::remove_all(dir);
}

TEST(EventLog, MalformedKnownEventsAreErrors) {
  EXPECT_FALSE(replay({event(0, 1, ev::kState, {{"from", "healthy"}})}).ok());
  EXPECT_FALSE(replay({event(0, 1, ev::kState, {{"to", "sideways"}})}).ok());
  EXPECT_TRUE(replay({event(0, 1, "some_future_event", {{"x", 1}})}).ok());
}

// A crafted run_finished whose state is not a string: replay (and so `report` and `status`) once
// threw nlohmann's type_error out of the goodput fold. It is not a requeue; nothing throws.
TEST(EventLog, NonStringRunFinishedStateDoesNotThrow) {
  for (const json& state : {json(nullptr), json(3), json::array()}) {
    std::vector<json> log = {event(0, 1, ev::kRunFinished, {{"state", state}})};
    EXPECT_NO_THROW({
      auto r = replay(log);
      if (r.ok()) {
        EXPECT_DOUBLE_EQ(r->goodput.requeue_at(100.0), 0.0);
      }
    }) << state.dump();
  }
}

}  // namespace
}  // namespace grpo::supervise
