// The supervisor's pure core: the transition table, the restart policy over every failure class,
// and event-log replay.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "grpo/supervise/event_log.h"
#include "grpo/supervise/restart_policy.h"
#include "grpo/supervise/state_machine.h"

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
  // Lost: from the checkpoint at t=111 to the first step past step 12 at t=124.
  EXPECT_DOUBLE_EQ(s.lost_s, 13.0);
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

}  // namespace
}  // namespace grpo::supervise
