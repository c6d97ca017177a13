// Hang attribution (docs/supervisor.md, "Hang attribution"; hang_report.h): grouping of
// hand-made stacks (4 ranks with rank 2 different, missing ranks, ties), eu-stack's text, the
// trainer's `stack` event, the `hang_report` fields (golden) and the supervisor loop that asks
// for the stacks before it kills a hung attempt (simulated runner, fake clock).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "grpo/process/signals.h"
#include "grpo/runlog/event_log.h"
#include "grpo/runlog/hang_report.h"
#include "grpo/runlog/run_view.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"
#include "grpo/test_support/supervisor_harness.h"
#include "test_support.h"

namespace grpo::supervise {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A rank whose main thread has `functions` (innermost first) under two C library frames, and
// one helper thread.
RankStacks rank_with(int rank, const std::vector<std::string>& functions,
                     const std::string& phase = "update") {
  RankStacks s;
  s.rank = rank;
  s.phase = phase;
  s.source = "signal";
  ThreadStack main;
  main.tid = 100 + rank;
  main.main = true;
  main.frames.push_back({"__futex_abstimed_wait_common", "libc.so.6", "", 0});
  main.frames.push_back({"pthread_cond_wait", "libc.so.6", "", 0});
  for (const auto& f : functions) main.frames.push_back({f, "grpo-trainer", "", 0});
  ThreadStack helper;
  helper.tid = 200 + rank;
  helper.name = "helper";
  helper.frames.push_back({"epoll_wait", "libc.so.6", "", 0});
  s.threads = {helper, main};  // the main thread need not come first
  return s;
}

const std::vector<std::string> kCollective = {"gloo::AllreduceOp::run", "Communicator::allreduce",
                                              "grpo_step", "main"};
const std::vector<std::string> kSleeping = {"std::this_thread::sleep_for",
                                            "RunContext::fire_step_faults", "grpo_step", "main"};

TEST(HangReport, FourRanksRankTwoDiffers) {
  std::vector<RankStacks> stacks;
  for (int r : {0, 1, 3}) stacks.push_back(rank_with(r, kCollective));
  stacks.push_back(rank_with(2, kSleeping));
  const HangReport h = group_stacks(4, stacks);
  ASSERT_EQ(h.groups.size(), 2u);
  EXPECT_TRUE(h.majority);
  EXPECT_EQ(h.groups[0].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(h.groups[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(h.odd_ranks, (std::vector<int>{2}));
  EXPECT_TRUE(h.missing_ranks.empty());
  // The key skips the C library's innermost frames; the summary names the odd rank first.
  EXPECT_EQ(h.summary,
            "rank(s) 2 differ from the 3 others (update): std::this_thread::sleep_for < "
            "RunContext::fire_step_faults < grpo_step < main; the others: gloo::AllreduceOp::run "
            "< Communicator::allreduce < grpo_step < main");
}

TEST(HangReport, AddressesAndHelperThreadsDoNotSplitAGroup) {
  RankStacks a = rank_with(0, kCollective);
  RankStacks b = rank_with(1, kCollective);
  b.threads[0].frames.push_back({"something_else", "libfoo.so", "", 0});  // helper thread
  b.threads[1].frames[0].function = "__GI___poll";    // waits in another C library call
  b.threads[1].frames[2].file = "gloo/allreduce.cc";  // a file:line does not matter either
  b.threads[1].frames[2].line = 42;
  const HangReport h = group_stacks(2, {a, b});
  ASSERT_EQ(h.groups.size(), 1u);
  EXPECT_TRUE(h.majority);
  EXPECT_TRUE(h.odd_ranks.empty());
  EXPECT_EQ(h.summary.rfind("all 2 answering rank(s) have the same stack (update): ", 0), 0u)
      << h.summary;
}

TEST(HangReport, MissingRanksAreNamedAndOutOfRangeRanksIgnored) {
  std::vector<RankStacks> stacks = {rank_with(0, kCollective), rank_with(1, kCollective),
                                    rank_with(3, kSleeping), rank_with(9, kSleeping)};
  const HangReport h = group_stacks(4, stacks);
  EXPECT_EQ(h.missing_ranks, (std::vector<int>{2}));
  EXPECT_EQ(h.odd_ranks, (std::vector<int>{3}));
  EXPECT_NE(h.summary.find("; rank(s) 2 did not answer"), std::string::npos) << h.summary;
  const HangReport none = group_stacks(3, {});
  EXPECT_EQ(none.missing_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(none.majority);
  EXPECT_EQ(none.summary, "no rank answered with its stack; rank(s) 0,1,2 did not answer");
}

TEST(HangReport, TiesHaveNoMajorityAndNoOddRank) {
  // 2 vs 2, and two ranks with two different stacks: nobody can be called the odd one.
  const HangReport two_two = group_stacks(4, {rank_with(0, kCollective), rank_with(1, kSleeping),
                                              rank_with(2, kCollective), rank_with(3, kSleeping)});
  EXPECT_FALSE(two_two.majority);
  EXPECT_TRUE(two_two.odd_ranks.empty());
  ASSERT_EQ(two_two.groups.size(), 2u);
  EXPECT_EQ(two_two.groups[0].ranks, (std::vector<int>{0, 2}));  // equal sizes: lowest rank first
  EXPECT_EQ(two_two.summary, "no majority among 4 answering rank(s): 2 different stacks");
  const HangReport pair = group_stacks(2, {rank_with(1, kSleeping), rank_with(0, kCollective)});
  EXPECT_FALSE(pair.majority);
  EXPECT_TRUE(pair.odd_ranks.empty());
  // One rank alone is no majority either: the summary shows its stack.
  const HangReport one = group_stacks(2, {rank_with(1, kCollective)});
  EXPECT_FALSE(one.majority);
  EXPECT_EQ(one.summary.rfind("only rank 1 answered (update): ", 0), 0u) << one.summary;
}

TEST(HangReport, ARanksSecondAnswerReplacesItsFirst) {
  StackRequest req;
  req.world_size = 2;
  req.method = "signal";
  req.deadline = 10;
  req.add(rank_with(0, kSleeping));
  req.add(rank_with(0, kCollective));
  EXPECT_FALSE(req.complete(1));
  req.add(rank_with(1, kCollective));
  EXPECT_TRUE(req.complete(1));
  EXPECT_TRUE(group_stacks(2, req.received).odd_ranks.empty());
  StackRequest late;
  late.world_size = 2;
  late.method = "signal";
  late.deadline = 10;
  EXPECT_TRUE(late.complete(10));
}

// A stopped rank (SIGSTOP) cannot answer: the request is complete without it, and the summary
// names it first.
TEST(HangReport, StoppedRanksAreNotWaitedForAndLeadTheSummary) {
  StackRequest req;
  req.world_size = 3;
  req.method = "signal";
  req.deadline = 10;
  req.stopped = {2};
  req.add(rank_with(0, kCollective));
  EXPECT_FALSE(req.complete(1));
  req.add(rank_with(1, kCollective));
  EXPECT_TRUE(req.complete(1));
  const HangReport h = group_stacks(3, req.received, req.stopped);
  EXPECT_EQ(h.stopped_ranks, (std::vector<int>{2}));
  EXPECT_TRUE(h.missing_ranks.empty());
  EXPECT_EQ(
      h.summary.rfind("rank(s) 2 stopped (process state T, e.g. SIGSTOP); all 2 answering", 0), 0u)
      << h.summary;
  EXPECT_EQ(hang_report_fields(h)["stopped_ranks"], nlohmann::json::array({2}));
  // A stopped rank that answered after all (continued in time) counts once.
  req.add(rank_with(2, kSleeping));
  EXPECT_TRUE(group_stacks(3, req.received, req.stopped).stopped_ranks.empty());
}

TEST(HangReport, ParsesEuStack) {
  // The shape of `eu-stack -s -m -p PID` (elfutils 0.188) as printed for a sleeping process.
  const std::string text =
      "PID 6419 - process\n"
      "TID 6419:\n"
      "#0  0x00007f7546d1d503 clock_nanosleep@GLIBC_2.2.5 - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "    ../sysdeps/unix/sysv/linux/clock_nanosleep.c:71:10\n"
      "#1  0x00007f7546d21e53 __nanosleep - /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "#2  0x0000563ae13f94af - /usr/bin/sleep\n"
      "#3  0x0000563ae13f8f81 main - /usr/bin/sleep\n"
      "    src/sleep.c:120\n"
      "TID 6420:\n"
      "#0  0x00007f7546d1d503 epoll_wait - /usr/lib/x86_64-linux-gnu/libc.so.6\n";
  const RankStacks s = parse_eu_stack(3, text);
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.source, "eu-stack");
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_TRUE(s.threads[0].main);
  EXPECT_FALSE(s.threads[1].main);
  ASSERT_EQ(s.threads[0].frames.size(), 4u);
  EXPECT_EQ(s.threads[0].frames[0].function, "clock_nanosleep@GLIBC_2.2.5");
  EXPECT_EQ(s.threads[0].frames[0].module, "libc.so.6");
  EXPECT_EQ(s.threads[0].frames[0].file, "../sysdeps/unix/sysv/linux/clock_nanosleep.c");
  EXPECT_EQ(s.threads[0].frames[0].line, 71);
  EXPECT_EQ(s.threads[0].frames[2].function, "");
  EXPECT_EQ(s.threads[0].frames[2].module, "sleep");
  EXPECT_EQ(s.threads[0].frames[3].file, "src/sleep.c");
  EXPECT_EQ(s.threads[0].frames[3].line, 120);
  EXPECT_EQ(stack_key(s), (std::vector<std::string>{"??@sleep", "main"}));
}

TEST(HangReport, ReadsTheTrainersStackEvent) {
  // A `stack` event as docs/telemetry.md shows it (written by hand).
  const json e = json::parse(R"J({"schema":1,"type":"stack","rank":1,"step":7,"phase":"update",
    "source":"signal","missing_threads":0,"threads_total":2,"threads":[
    {"tid":11,"name":"grpo-trainer","main":true,"truncated":false,"frames":[
      {"function":"nanosleep","module":"libc.so.6","address":"0x7f00"},
      {"function":"grpo::trainer::RunContext::fire_step_faults(long, std::string const&, grpo::trainer::QwenModel&)",
       "module":"grpo-trainer","file":"trainer/src/run_context.cpp","line":98,"address":"0x55aa"}]
},
    {"tid":12,"name":"grpo-trainer","main":false,"truncated":false,"frames":[]}]})J");
  auto s = rank_stacks_from_event(1, e);
  ASSERT_TRUE(s.ok()) << s.error().str();
  EXPECT_EQ(s->phase, "update");
  EXPECT_EQ(s->step, 7);
  ASSERT_EQ(s->threads.size(), 2u);
  EXPECT_EQ(s->threads[0].frames[1].line, 98);
  EXPECT_EQ(stack_key(*s).size(), 1u);
  EXPECT_FALSE(rank_stacks_from_event(1, json{{"type", "stack"}}).ok());
  EXPECT_FALSE(rank_stacks_from_event(1, json{{"threads", json::array({1})}}).ok());
}

TEST(GoldenHangReport, FourRanksRankTwoDiffers) {
  std::vector<RankStacks> stacks;
  for (int r : {0, 1}) stacks.push_back(rank_with(r, kCollective));
  stacks.push_back(rank_with(2, kSleeping, "update"));
  stacks.back().threads[1].frames[3].file = "trainer/src/run_context.cpp";
  stacks.back().threads[1].frames[3].line = 98;
  // rank 3 does not answer
  json fields = hang_report_fields(group_stacks(4, stacks), 4);
  test::expect_golden("hang-report-4-ranks.json", fields.dump(2) + "\n");
  test::expect_golden("hang-report-4-ranks-stacks.txt", format_stacks(stacks));
}

// The supervisor loop: a hang on rank 2 of 4; ranks 0, 1 and 3 answer SIGUSR1 with the same
// stack, rank 2 with another. The report comes before the kill and names rank 2.
TEST(HangReport, SupervisorAsksForStacksBeforeItKills) {
  SupervisorHarness h("hangrep");
  h.opts.trainer_argv = {"grpo-trainer"};
  h.opts.ranks_per_node = 4;
  h.opts.config.budget.max_restarts = 3;
  h.opts.config.budget.backoff_base_s = 1;
  h.opts.config.stack_timeout_s = 3;
  SimAttempt first = sim_trainer(4, 0, 10, 1.0, 5);
  sim_fault(first, 2, 7, std::nullopt);  // everyone falls silent at step 7
  auto event = [](int rank, const std::vector<std::string>& fns) {
    json frames = json::array();
    for (const auto& f : fns) frames.push_back({{"function", f}, {"module", "grpo-trainer"}});
    return json{{"type", "stack"},
                {"rank", rank},
                {"step", 7},
                {"phase", "update"},
                {"source", "signal"},
                {"threads", json::array({{{"tid", 1}, {"main", true}, {"frames", frames}}})}};
  };
  for (int r : {0, 1, 3}) first.stack_on_usr1[r] = event(r, kCollective);
  first.stack_on_usr1[2] = event(2, kSleeping);
  h.push(first);
  SimAttempt second = sim_trainer(4, 5, 10, 1.0, 5);
  sim_fault(second, 1, 8, std::nullopt);  // no rank answers this time
  h.push(second);
  h.push(sim_trainer(4, 5, 10, 1.0, 5));
  EXPECT_EQ(h.run(), kExitSucceeded);
  // SIGUSR1 first, the kill after it.
  const auto& sent = h.runner.signals();
  ASSERT_GE(sent.size(), 2u);
  EXPECT_EQ(sent[0], std::make_pair(1, SIGUSR1));
  EXPECT_EQ(sent[1], std::make_pair(1, SIGKILL));
  const std::vector<json> events = h.events();
  std::vector<json> reports;
  double report_time = 0, failure_time = 0;
  for (const auto& e : events) {
    if (e["type"] == "hang_report") reports.push_back(e);
    if (e["type"] == "hang_report" && e["attempt"] == 1) report_time = e["time"];
    if (e["type"] == "failure" && e["attempt"] == 1) failure_time = e["time"];
    EXPECT_NE(e["type"], "stack");  // the answers go into the report, not into the log
  }
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_LE(report_time, failure_time);
  const json& r1 = reports[0];
  EXPECT_EQ(r1["odd_ranks"], json::array({2}));
  EXPECT_EQ(r1["missing_ranks"], json::array());
  EXPECT_EQ(r1["groups"][0]["ranks"], json::array({0, 1, 3}));
  EXPECT_EQ(r1["method"], "signal");
  EXPECT_LT(r1["waited_s"].get<double>(), 1.0);  // every rank answered after 0.2 s
  EXPECT_EQ(r1["stacks_file"], "logs/attempt-1/stacks.txt");
  EXPECT_TRUE(fs::exists(h.dir / "logs/attempt-1/stacks.txt"));
  // The second hang: nobody answers; the supervisor waits stack_timeout_s, then kills.
  const json& r2 = reports[1];
  EXPECT_EQ(r2["attempt"], 2);
  EXPECT_EQ(r2["missing_ranks"], json::array({0, 1, 2, 3}));
  EXPECT_NEAR(r2["waited_s"].get<double>(), 3.0, 0.2);
  // status shows the newest report.
  auto s = replay(events);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->hang_report.is_object());
  EXPECT_EQ(s->hang_report["attempt"], 2);
  const std::string text = render_status(*s, h.dir.string(), s->last_time);
  EXPECT_NE(text.find("hang       attempt 2"), std::string::npos) << text;
}

}  // namespace
}  // namespace grpo::supervise
