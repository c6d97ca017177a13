// What the supervisor tells the trainer for trainer.save_freq = auto (docs/supervisor.md
// "Checkpoint interval"): the profile's prior MTBF until a failure is seen, then the run's own
// (time since the run started / failures), in GRPO_MTBF_S, _SOURCE and _FAILURES.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "grpo/process/signals.h"
#include "grpo/runlog/event_log.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"
#include "grpo/test_support/supervisor_harness.h"

namespace grpo::supervise {
namespace {

namespace fs = std::filesystem;

TEST(SupervisorMtbf, PriorUntilAFailureThenTheRunsOwnRate) {
  SupervisorHarness h("mtbf");
  h.opts.config.budget.max_restarts = 3;
  h.opts.config.budget.backoff_base_s = 1;
  h.opts.config.mtbf_prior_s = 7200;  // node_mtbf_hours = 2 on one node
  // Ranks of 1 s steps, a checkpoint every 5; the first attempt loses rank 1 at step 7.
  SimAttempt first = sim_trainer(2, 0, 10, 1.0, 5);
  sim_fault(first, 1, 7, Signaled{SIGKILL});
  h.push(first);
  h.push(sim_trainer(2, 5, 10, 1.0, 5));
  EXPECT_EQ(h.run(), kExitSucceeded);

  const auto& specs = h.runner.started();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(std::strtod(specs[0].env.at("GRPO_MTBF_S").c_str(), nullptr), 7200.0);
  EXPECT_EQ(specs[0].env.at("GRPO_MTBF_SOURCE"), "prior");
  EXPECT_EQ(specs[0].env.at("GRPO_MTBF_FAILURES"), "0");
  // One crash: the MTBF is the time from run_started to the second attempt's start, over 1.
  double run_started = 0, second_attempt = 0;
  for (const auto& e : h.events()) {
    if (e["type"] == "run_started") run_started = e["time"].get<double>();
    if (e["type"] == "attempt_started" && e["attempt"] == 2) second_attempt = e["time"];
  }
  ASSERT_GT(second_attempt, run_started);
  EXPECT_NEAR(std::strtod(specs[1].env.at("GRPO_MTBF_S").c_str(), nullptr),
              second_attempt - run_started, 1e-3);
  EXPECT_EQ(specs[1].env.at("GRPO_MTBF_SOURCE"), "observed");
  EXPECT_EQ(specs[1].env.at("GRPO_MTBF_FAILURES"), "1");
}

// supervisor.json keeps the prior; one written before it existed reads as 0 (the default).
TEST(SupervisorMtbf, PriorRoundTripsThroughSupervisorJson) {
  SupervisorConfig c;
  c.mtbf_prior_s = 5400;
  auto back = supervisor_config_from_json(supervisor_config_to_json(c), "supervisor.json");
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->mtbf_prior_s, 5400);
  auto j = supervisor_config_to_json(c);
  j.erase("mtbf_prior_s");
  auto old = supervisor_config_from_json(j, "supervisor.json");
  ASSERT_TRUE(old.ok()) << old.error().str();
  EXPECT_EQ(old->mtbf_prior_s, 0);
}

}  // namespace
}  // namespace grpo::supervise
