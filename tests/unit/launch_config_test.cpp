// What `run` / `submit` hand the supervisor (launch_common.h): the user's trainer --set wins over
// what the plan supplies, also for the micro batch that the supervisor passes last.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"
#include "launch_common.h"

namespace grpo::cli {
namespace {

namespace fs = std::filesystem;

core::Plan plan_with_micro_batch(int micro_batch) {
  core::Plan plan;
  plan.best.layout.micro_batch = micro_batch;
  return plan;
}

std::string micro(int v) {
  return std::string(supervise::kMicroBatchKey) + "=" + std::to_string(v);
}

TEST(SupervisorConfigFromLaunch, TheUsersMicroBatchWinsOverThePlans) {
  LaunchArgs args;
  EXPECT_EQ(supervisor_config(args, plan_with_micro_batch(8)).micro_batch, 8);
  args.trainer_sets = {"data.train_batch_size=16", micro(3)};
  EXPECT_EQ(supervisor_config(args, plan_with_micro_batch(8)).micro_batch, 3);
  args.trainer_sets.push_back(micro(5));  // the last --set wins, as in the trainer
  EXPECT_EQ(supervisor_config(args, plan_with_micro_batch(8)).micro_batch, 5);
  // Not a positive integer: the trainer refuses it; nothing is passed after it.
  for (const char* bad : {"=0", "=-2", "=four", "=", "=3.5"}) {
    args.trainer_sets = {std::string(supervise::kMicroBatchKey) + bad};
    EXPECT_FALSE(supervisor_config(args, plan_with_micro_batch(8)).micro_batch.has_value()) << bad;
  }
}

TEST(SupervisorConfigFromLaunch, TotalStepsFollowTheLastSetting) {
  EXPECT_EQ(total_steps({}), 400);
  EXPECT_EQ(total_steps({"trainer.sft_warmup_steps=2", "trainer.total_training_steps=4"}), 6);
  EXPECT_EQ(total_steps({"trainer.total_training_steps=4", "trainer.total_training_steps=9"}), 309);
}

// End to end through the supervisor: the argv of every attempt ends with the user's micro batch,
// not the plan's (the plan's used to be appended after the user's --set and silently win).
TEST(SupervisorConfigFromLaunch, EveryAttemptRunsWithTheUsersMicroBatch) {
  LaunchArgs args;
  args.trainer_sets = {micro(3)};
  supervise::FakeClock clock;
  supervise::SimulatedRunner runner{clock};
  slurm::FakeSignals signals;
  supervise::FakeJobControl job;
  job.slurm = false;
  supervise::NullStatusSink status;
  supervise::SupervisorOptions o;
  o.run_dir = fs::temp_directory_path() / ("grpo-launch-config-" + std::to_string(::getpid()));
  fs::remove_all(o.run_dir);
  o.trainer_argv = {"grpo-trainer", "--set", micro(3)};
  o.nodes = 1;
  o.ranks_per_node = 2;
  o.config = supervisor_config(args, plan_with_micro_batch(8));
  o.config.total_steps = 4;
  o.config.divisible_by.clear();
  runner.push(supervise::sim_trainer(2, 0, 4, 1.0, 2));
  supervise::SupervisorDeps deps{runner, clock, signals, job, status, [] { return -1; }};
  auto sup = supervise::Supervisor::open(o, deps);
  ASSERT_TRUE(sup.ok()) << sup.error().str();
  auto code = sup.value()->run();
  ASSERT_TRUE(code.ok()) << code.error().str();
  EXPECT_EQ(code.value(), supervise::kExitSucceeded);
  ASSERT_EQ(runner.started().size(), 1u);
  const auto& argv = runner.started().front().argv;
  EXPECT_EQ(argv.back(), micro(3));
  for (const auto& w : argv) EXPECT_NE(w, micro(8));
  fs::remove_all(o.run_dir);
}

}  // namespace
}  // namespace grpo::cli
