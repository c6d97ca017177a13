// grpo-trainer as real processes: bit-exact resume (1 and 2 ranks, dense and MoE), identical
// weights across ranks after every step, resume on a different number of ranks, torn and corrupt
// checkpoints, OOM and expert-imbalance injection, control requests and config errors.
#include <gtest/gtest.h>

#include <csignal>

#include "grpo/io/files.h"
#include "process_helpers.h"

namespace grpo::trainer::testing {
namespace {

struct ResumeCase {
  std::string model;
  int world;
};

void PrintTo(const ResumeCase& c, std::ostream* os) {
  *os << c.model << " on " << c.world << " rank(s)";
}

class BitExactResume : public ::testing::TestWithParam<ResumeCase> {};

// Uninterrupted run vs. a run killed at step 5 and resumed from its step-3 checkpoint (written
// after the first GRPO step: reference, optimizer moments and RNG all in play): the final
// weights are byte-identical. With 2 ranks the weights are also identical across ranks after
// every step.
TEST_P(BitExactResume, StoppedAndResumedEqualsUninterrupted) {
  const auto [model, world] = GetParam();
  const std::string tag = model + "-" + std::to_string(world);
  const auto args =
      with(fast_args(model), {"--set", "trainer.save_freq=3", "--set", "trainer.checksum_freq=1"});

  const fs::path a = fresh_dir("exact-a-" + tag);
  auto ra = run_ranks(world, a, args);
  expect_all_exit(ra, 0);
  const std::string want = ra[0].final_sha();
  ASSERT_FALSE(want.empty());
  for (const auto& r : ra) EXPECT_EQ(r.final_sha(), want);
  if (world > 1) {
    auto s0 = ra[0].of_type("step");
    auto s1 = ra[1].of_type("step");
    ASSERT_EQ(s0.size(), 6u);
    ASSERT_EQ(s1.size(), 6u);
    for (std::size_t i = 0; i < s0.size(); ++i) {
      EXPECT_EQ(s0[i]["weights_sha256"], s1[i]["weights_sha256"]) << "step " << i + 1;
    }
  }

  const fs::path b = fresh_dir("exact-b-" + tag);
  // One rank dies at the start of step 5; with 2 ranks its peer sees the lost connection.
  auto rb1 = run_ranks(world, b, with(args, {"--fault", "crash@step=5,rank=0"}));
  EXPECT_EQ(rb1[0].exit_code, 6) << rb1[0].stderr_text;
  if (world > 1) {
    EXPECT_EQ(rb1[1].exit_code, 4) << rb1[1].stderr_text;
    EXPECT_FALSE(rb1[1].of_type("COMM_ERROR").empty());
  }
  auto rb2 = run_ranks(world, b, with(args, {"--fault", "crash@step=5,rank=0"}));
  expect_all_exit(rb2, 0);
  auto loaded = rb2[0].of_type("checkpoint_loaded");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0]["step"], 3);
  EXPECT_EQ(loaded[0]["resharded"], false);
  EXPECT_EQ(loaded[0]["source"], "own");  // every rank read the shared run directory itself
  for (const auto& r : rb2) EXPECT_EQ(r.final_sha(), want) << "resumed run differs";
  fs::remove_all(a);
  fs::remove_all(b);
}

INSTANTIATE_TEST_SUITE_P(Models, BitExactResume,
                         ::testing::Values(ResumeCase{"tiny-dense", 1}, ResumeCase{"tiny-moe", 1},
                                           ResumeCase{"tiny-dense", 2}, ResumeCase{"tiny-moe", 2}),
                         [](const auto& p) {
                           std::string n =
                               p.param.model + "_" + std::to_string(p.param.world) + "ranks";
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// A GRPO_FAULT left in the environment injects nothing: faults come only from --fault, which
// the launcher passes (issue 14 item 10, finding 1).
TEST(TrainerProcess, StrayGrpoFaultEnvironmentIsIgnored) {
  const fs::path d = fresh_dir("stray-fault");
  auto r = run_ranks(1, d, fast_args("tiny-dense"), {{"GRPO_FAULT", "exit@step=2,code=9"}});
  expect_all_exit(r, 0);
  EXPECT_TRUE(r[0].of_type("fault_injected").empty());
  EXPECT_NE(r[0].stderr_text.find("GRPO_FAULT=exit@step=2,code=9 is ignored"), std::string::npos)
      << r[0].stderr_text;
  fs::remove_all(d);
}

// GRPO_STANDBY=1 in the environment once made grpo-trainer wait for a "go" on stdin and, at its
// end, exit 0 without training: a production run reported success with no step. A standby is
// now `grpo-trainer --standby ARGS` (the local runner's flag): the variable changes nothing.
TEST(TrainerProcess, StrayStandbyEnvironmentIsIgnored) {
  const fs::path d = fresh_dir("stray-standby");
  auto r = run_ranks(1, d, fast_args("tiny-dense"), {{"GRPO_STANDBY", "1"}});
  expect_all_exit(r, 0);
  EXPECT_FALSE(r[0].of_type("step").empty()) << r[0].stderr_text;
  EXPECT_EQ(r[0].of_type("done").size(), 1u) << r[0].stderr_text;
  fs::remove_all(d);
}

// Two ranks find each other through the rendezvous store with the run directory's secret
// (docs/security.md); a secret file that others may read is refused with one line, exit 2.
TEST(TrainerProcess, RanksProveTheRunsSecretAtTheRendezvous) {
  const fs::path d = fresh_dir("secret");
  fs::create_directories(d);
  ASSERT_TRUE(
      io::write_file_atomic(d / io::kRendezvousSecretFile, io::new_secret() + "\n", 0600).ok());
  auto ok = run_ranks(2, d, fast_args("tiny-dense"));
  expect_all_exit(ok, 0);
  EXPECT_EQ(ok[0].of_type("done").size(), 1u) << ok[0].stderr_text;
  fs::permissions(d / io::kRendezvousSecretFile, fs::perms::others_read, fs::perm_options::add);
  fs::remove_all(d / "checkpoints");
  auto open = run_ranks(2, d, fast_args("tiny-dense"));
  expect_all_exit(open, 2);
  EXPECT_NE(open[0].stderr_text.find("lets others read the run's secret"), std::string::npos)
      << open[0].stderr_text;
  fs::remove_all(d);
}

TEST(TrainerProcess, ResumeOnADifferentNumberOfRanks) {
  const fs::path d = fresh_dir("reshard");
  const auto args = with(fast_args("tiny-dense"), {"--set", "trainer.save_freq=3"});
  auto r1 = run_ranks(1, d, with(args, {"--fault", "exit@step=4,code=9"}));
  ASSERT_EQ(r1[0].exit_code, 9) << r1[0].stderr_text;
  auto r2 = run_ranks(2, d, args);
  expect_all_exit(r2, 0);
  auto loaded = r2[0].of_type("checkpoint_loaded");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0]["resharded"], true);
  EXPECT_EQ(loaded[0]["saved_world_size"], 1);
  EXPECT_NE(r2[0].stderr_text.find("written by 1 data-parallel replica(s) on 2"), std::string::npos)
      << r2[0].stderr_text;
  EXPECT_EQ(r2[0].final_sha(), r2[1].final_sha());
  fs::remove_all(d);
}

TEST(TrainerProcess, CorruptAndTornCheckpointsAreSkipped) {
  const fs::path d = fresh_dir("corrupt");
  const auto args = with(fast_args("tiny-dense"), {"--set", "trainer.save_freq=2"});
  // Step 2's checkpoint is good, step 4's is corrupted after commit, then the rank crashes at 5.
  auto r1 =
      run_ranks(1, d, with(args, {"--fault", "corrupt_ckpt@step=4", "--fault", "crash@step=5"}));
  ASSERT_EQ(r1[0].exit_code, 6) << r1[0].stderr_text;
  // Step 6's checkpoint is torn (the writer dies half way through model.safetensors).
  auto r2 = run_ranks(1, d, with(args, {"--fault", "torn_ckpt@step=6"}));
  ASSERT_EQ(r2[0].exit_code, 6) << r2[0].stderr_text;
  auto skipped = r2[0].of_type("checkpoint_skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0]["path"].get<std::string>().find("step_00000004"), std::string::npos);
  EXPECT_NE(skipped[0]["reason"].get<std::string>().find("SHA-256"), std::string::npos);
  EXPECT_EQ(r2[0].of_type("checkpoint_loaded").at(0)["step"], 2);
  bool torn_left = false;
  for (const auto& e : fs::directory_iterator(d / "checkpoints")) {
    torn_left |= e.path().filename().string().rfind(".tmp-", 0) == 0;
  }
  EXPECT_TRUE(torn_left);
  auto r3 = run_ranks(1, d, args);
  ASSERT_EQ(r3[0].exit_code, 0) << r3[0].stderr_text;
  // The second attempt wrote a good step-4 checkpoint over the corrupt one; 6 was torn.
  EXPECT_EQ(r3[0].of_type("checkpoint_loaded").at(0)["step"], 4);
  for (const auto& e : fs::directory_iterator(d / "checkpoints")) {
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << "temporary left behind";
  }
  fs::remove_all(d);
}

TEST(TrainerProcess, InjectedOomReportsPhaseAndSizeAndExits5) {
  const fs::path d = fresh_dir("oom");
  auto r = run_ranks(1, d, with(fast_args("tiny-dense"), {"--fault", "oom@step=3,phase=update"}));
  ASSERT_EQ(r[0].exit_code, 5) << r[0].stderr_text;
  auto oom = r[0].of_type("OOM_ERROR");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_EQ(oom[0]["phase"], "update");
  EXPECT_EQ(oom[0]["step"], 3);
  EXPECT_EQ(oom[0]["requested_bytes"], std::int64_t{1} << 44);
  fs::remove_all(d);
}

TEST(TrainerProcess, MoeReportsExpertLoadAndInjectedImbalance) {
  const fs::path d = fresh_dir("imbalance");
  auto r =
      run_ranks(1, d,
                with(fast_args("tiny-moe"), {"--fault", "imbalance@step=4,phase=rollout", "--set",
                                             "trainer.expert_imbalance_threshold=3.5"}));
  ASSERT_EQ(r[0].exit_code, 0) << r[0].stderr_text;
  auto load = r[0].of_type("expert_load");
  ASSERT_EQ(load.size(), 4u * 4u);  // 4 GRPO steps x 4 MoE layers
  EXPECT_EQ(load[0]["tokens_per_expert"].size(), 8u);
  // Every token sends one of its two slots to expert 0: max/mean = 4 in every layer.
  int injected = 0;
  for (const auto& e : r[0].of_type("EXPERT_IMBALANCE")) {
    if (e["step"] != 4) continue;
    ++injected;
    EXPECT_EQ(e["expert"], 0);
    EXPECT_GT(e["imbalance"].get<double>(), 3.9);
    EXPECT_EQ(e["threshold"], 3.5);
  }
  EXPECT_EQ(injected, 4);
  fs::remove_all(d);
}

TEST(TrainerProcess, HeartbeatsStopDuringAnInjectedHang) {
  const fs::path d = fresh_dir("hang");
  auto r = run_ranks(1, d, with(fast_args("tiny-dense"), {"--fault", "hang@step=2,s=2"}));
  ASSERT_EQ(r[0].exit_code, 0) << r[0].stderr_text;
  double max_gap = 0, last = 0;
  for (const auto& e : r[0].events) {
    const double t = e.value("time", 0.0);
    if (last > 0) max_gap = std::max(max_gap, t - last);
    last = t;
  }
  EXPECT_GE(max_gap, 1.9);
  for (const auto& s : r[0].of_type("step")) {
    // At least one heartbeat per step.
    const auto step = s["step"].get<int>();
    bool beat = false;
    for (const auto& h : r[0].of_type("heartbeat")) beat |= h["step"] == step;
    EXPECT_TRUE(beat) << step;
  }
  fs::remove_all(d);
}

TEST(TrainerProcess, ControlFilesRequestACheckpointAndAStop) {
  const fs::path d = fresh_dir("control");
  fs::create_directories(d / "control");
  std::ofstream(d / "control" / "checkpoint").put('\n');
  std::ofstream(d / "control" / "stop").put('\n');
  auto r = run_ranks(1, d, fast_args("tiny-dense"));
  ASSERT_EQ(r[0].exit_code, 7) << r[0].stderr_text;
  auto saved = r[0].of_type("checkpoint_saved");
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0]["step"], 1);
  EXPECT_EQ(saved[0]["reason"], "stop");
  EXPECT_FALSE(fs::exists(d / "control" / "checkpoint"));
  EXPECT_FALSE(fs::exists(d / "control" / "stop"));
  auto again = run_ranks(1, d, fast_args("tiny-dense"));
  ASSERT_EQ(again[0].exit_code, 0) << again[0].stderr_text;
  EXPECT_EQ(again[0].of_type("checkpoint_loaded").at(0)["step"], 1);
  fs::remove_all(d);
}

// SIGUSR2 on one rank makes both ranks checkpoint at the same step and carry on.
TEST(TrainerProcess, Sigusr2OnOneRankCheckpointsEveryRankAtTheSameStep) {
  const fs::path d = fresh_dir("usr2");
  auto pids =
      start_ranks(2, d, with(fast_args("tiny-dense"), {"--fault", "hang@step=2,s=1.5,rank=1"}));
  ASSERT_TRUE(wait_for_output(d, 1, "fault_injected", 60));
  ::kill(pids[1], SIGUSR2);
  auto r = wait_ranks(pids, d);
  expect_all_exit(r, 0);
  auto saved = r[0].of_type("checkpoint_saved");
  ASSERT_EQ(saved.size(), 2u);  // the request, then the final one
  EXPECT_EQ(saved[0]["step"], 2);
  EXPECT_EQ(saved[0]["reason"], "request");
  EXPECT_EQ(r[0].final_sha(), r[1].final_sha());
  fs::remove_all(d);
}

// SIGUSR1 answers with one `stack` event (docs/telemetry.md) and training goes on. Rank 1 sleeps
// in the hang fault (its telemetry muted) and still answers: its main thread is in
// RunContext::fire_step_faults (trainer/src/run_context.cpp), which the fault runs in. Rank 0 waits
// for it in a collective; its main thread is under run_trainer (when its 32 frames reach it).
TEST(TrainerProcess, Sigusr1AnswersWithEveryThreadsStack) {
  const fs::path d = fresh_dir("usr1");
  auto pids =
      start_ranks(2, d, with(fast_args("tiny-dense"), {"--fault", "hang@step=3,s=4,rank=1"}));
  ASSERT_TRUE(wait_for_output(d, 1, "fault_injected", 60));
  ::usleep(500 * 1000);  // rank 0 reaches the next collective
  ::kill(pids[0], SIGUSR1);
  ::kill(pids[1], SIGUSR1);
  auto r = wait_ranks(pids, d);
  expect_all_exit(r, 0);
  EXPECT_EQ(r[0].final_sha(), r[1].final_sha());
  auto has = [](const nlohmann::json& thread, const std::string& part) {
    for (const auto& f : thread["frames"]) {
      if (f.value("function", "").find(part) != std::string::npos) return true;
    }
    return false;
  };
  for (int rank = 0; rank < 2; ++rank) {
    auto stacks = r[rank].of_type("stack");
    ASSERT_EQ(stacks.size(), 1u) << "rank " << rank << ": " << r[rank].stderr_text;
    const auto& e = stacks[0];
    EXPECT_EQ(e["rank"], rank);
    EXPECT_EQ(e["source"], "signal");
    EXPECT_EQ(e["missing_threads"], 0);
    ASSERT_GE(e["threads"].size(), 1u);
    const auto& main = e["threads"][0];
    EXPECT_TRUE(main["main"].get<bool>());
    EXPECT_EQ(main["tid"], e["pid"]);
    ASSERT_FALSE(main["frames"].empty());
    EXPECT_LE(main["frames"].size(), 32u);
    // Innermost 32 frames: a deep LibTorch wait may not reach run_trainer (then truncated).
    if (!main["truncated"].get<bool>()) {
      EXPECT_TRUE(has(main, "grpo::trainer::run_trainer")) << main.dump();
    }
    EXPECT_FALSE(has(main, "on_capture")) << "the capture handler's own frame is dropped";
    std::size_t mains = 0;
    for (const auto& t : e["threads"]) {
      mains += t["main"].get<bool>() ? 1 : 0;
      // The thread the request reached may still be in its handler: never part of a stack.
      EXPECT_FALSE(has(t, "on_stack_request")) << t.dump();
      EXPECT_FALSE(has(t, "__restore_rt")) << t.dump();
    }
    EXPECT_EQ(mains, 1u);
    if (rank == 1) {
      EXPECT_EQ(e["step"], 3);
      EXPECT_EQ(e["phase"], "start");
      EXPECT_TRUE(has(main, "grpo::trainer::RunContext::fire_step_faults")) << main.dump();
      // Debug information gives the fault's frame a file and line (the innermost inlined
      // function's at that address: e.g. this_thread_sleep.h for the sleep inside it).
      bool line = false;
      for (const auto& f : main["frames"]) {
        line = line || (f.value("function", "").find("fire_step_faults") != std::string::npos &&
                        !f.value("file", "").empty() && f.value("line", 0) > 0);
      }
      EXPECT_TRUE(line) << main.dump();
    } else {
      EXPECT_FALSE(has(main, "fire_step_faults")) << main.dump();
    }
  }
  fs::remove_all(d);
}

TEST(TrainerProcess, ConfigErrorsExit2WithOneLine) {
  const fs::path d = fresh_dir("config");
  auto r = run_ranks(
      1, d, with(fast_args("tiny-dense"), {"--set", "actor_rollout_ref.rollout.temprature=0.5"}));
  ASSERT_EQ(r[0].exit_code, 2);
  auto err = r[0].of_type("error");
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(err[0]["code"], "CONFIG_ERROR");
  EXPECT_NE(err[0]["message"].get<std::string>().find(
                "did you mean 'actor_rollout_ref.rollout.temperature'"),
            std::string::npos);
  // 3 prompts cannot be split over 2 ranks.
  auto odd =
      run_ranks(2, d,
                with(fast_args("tiny-dense"), {"--set", "data.train_batch_size=3", "--set",
                                               "actor_rollout_ref.actor.ppo_mini_batch_size=3"}));
  for (const auto& rr : odd) {
    EXPECT_EQ(rr.exit_code, 2);
    EXPECT_NE(rr.stderr_text.find("not divisible by the number of ranks"), std::string::npos);
  }
  auto model = run_ranks(1, d, {"--model", "tiny-dens"});
  EXPECT_EQ(model[0].exit_code, 2);
  EXPECT_NE(model[0].stderr_text.find("did you mean 'tiny-dense'"), std::string::npos);
  fs::remove_all(d);
}

}  // namespace
}  // namespace grpo::trainer::testing
