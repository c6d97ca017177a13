// trainer.save_freq = auto: the Young-Daly interval and the MTBF estimate (core/
// checkpoint_interval.h). Expected values are derived by hand in the comments.
#include <gtest/gtest.h>

#include "grpo/core/checkpoint_interval.h"

namespace grpo::core {
namespace {

// C = 2 s, M = 4 h = 14,400 s: 2 x 2 x 14,400 = 57,600 = 240^2, so T = 240 s; at 1.5 s per step
// that is 240 / 1.5 = 160 steps.
TEST(CheckpointInterval, YoungDalyHandExample) {
  const SaveInterval v = young_daly_interval(2.0, 14400.0, 1.5, 0.0, 1000);
  EXPECT_DOUBLE_EQ(v.seconds, 240.0);
  EXPECT_EQ(v.steps, 160);
  EXPECT_NE(v.why.find("= 240 s"), std::string::npos) << v.why;
}

// C = 0.05 s, M = 1 h: 2 x 0.05 x 3,600 = 360, sqrt(360) = 18.97 s (18.97^2 = 359.9); at 0.5 s
// per step 37.9 -> 38 steps. An asynchronous write of 30 s raises it to 30 / 0.5 = 60 steps.
TEST(CheckpointInterval, RoundsToStepsAndHonoursTheWriteTime) {
  const SaveInterval v = young_daly_interval(0.05, 3600.0, 0.5, 0.0, 1000);
  EXPECT_NEAR(v.seconds, 18.9737, 1e-4);
  EXPECT_EQ(v.steps, 38);
  const SaveInterval w = young_daly_interval(0.05, 3600.0, 0.5, 30.0, 1000);
  EXPECT_DOUBLE_EQ(w.seconds, 30.0);
  EXPECT_EQ(w.steps, 60);
  EXPECT_NE(w.why.find("raised to 30 s"), std::string::npos) << w.why;
}

// The 160 steps of the first example capped at the 100 steps left; a cost of 0 (or an optimum
// under half a step: sqrt(2 x 1e-4 x 1) = 0.014 s at 1 s per step) still saves every step.
TEST(CheckpointInterval, BoundedByOneStepAndTheRunsEnd) {
  const SaveInterval capped = young_daly_interval(2.0, 14400.0, 1.5, 0.0, 100);
  EXPECT_EQ(capped.steps, 100);
  EXPECT_NE(capped.why.find("capped at the 100 step(s) left"), std::string::npos) << capped.why;
  EXPECT_EQ(young_daly_interval(0.0, 3600.0, 1.0, 0.0, 50).steps, 1);
  const SaveInterval tiny = young_daly_interval(1e-4, 1.0, 1.0, 0.0, 50);
  EXPECT_NEAR(tiny.seconds, 0.014142, 1e-6);
  EXPECT_EQ(tiny.steps, 1);
}

// No failure yet: the prior. Three failures in 900 s of run: 900 / 3 = 300 s.
TEST(CheckpointInterval, MtbfFromThePriorThenFromFailures) {
  const MtbfEstimate prior = estimate_mtbf(21600.0, 0, 500.0);
  EXPECT_DOUBLE_EQ(prior.seconds, 21600.0);
  EXPECT_EQ(prior.source, "prior");
  const MtbfEstimate seen = estimate_mtbf(21600.0, 3, 900.0);
  EXPECT_DOUBLE_EQ(seen.seconds, 300.0);
  EXPECT_EQ(seen.failures, 3);
  EXPECT_EQ(seen.source, "observed");
  // The default node figure: 54 days x 24 h x 2,048 nodes / 419 interruptions = 6,334.6 h, rounded
  // to 6,335.
  EXPECT_NEAR(54.0 * 24 * 2048 / 419, kDefaultNodeMtbfHours, 0.5);
}

}  // namespace
}  // namespace grpo::core
