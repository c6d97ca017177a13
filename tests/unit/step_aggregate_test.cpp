// Folding the step events of many ranks (step_aggregate.h) and the straggler median computed
// from one sort per step (monitor.h): expected values derived by hand in the comments.
#include <gtest/gtest.h>

#include "grpo/runlog/step_aggregate.h"
#include "grpo/supervise/monitor.h"

namespace grpo::supervise {
namespace {

using nlohmann::json;

json step(std::int64_t s, double step_s, double rss) {
  return {{"type", "step"}, {"step", s}, {"step_s", step_s}, {"peak_rss_mib", rss}};
}

TEST(StepAggregate, OneSummaryWhenEveryRankReported) {
  StepAggregator agg(4);
  // step_s of ranks 0..3: 1.0, 3.0, 2.0, 2.0 -> sorted 1, 2, 2, 3: min 1 (rank 0), median
  // (2 + 2) / 2 = 2, max 3 (rank 1). peak_rss_mib 10, 40, 40, 20: max 40, lowest such rank 1.
  EXPECT_TRUE(agg.add(0, step(1, 1.0, 10)).empty());
  EXPECT_TRUE(agg.add(1, step(1, 3.0, 40)).empty());
  EXPECT_TRUE(agg.add(2, step(1, 2.0, 40)).empty());
  const auto done = agg.add(3, step(1, 2.0, 20));
  ASSERT_EQ(done.size(), 1u);
  const json& s = done[0];
  EXPECT_EQ(s["step"], 1);
  EXPECT_EQ(s["ranks"], 4);
  EXPECT_EQ(s["missing"], 0);
  EXPECT_DOUBLE_EQ(s["step_s"]["min"].get<double>(), 1.0);
  EXPECT_EQ(s["step_s"]["min_rank"], 0);
  EXPECT_DOUBLE_EQ(s["step_s"]["median"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(s["step_s"]["max"].get<double>(), 3.0);
  EXPECT_EQ(s["step_s"]["max_rank"], 1);
  EXPECT_DOUBLE_EQ(s["peak_rss_mib"]["max"].get<double>(), 40.0);
  EXPECT_EQ(s["peak_rss_mib"]["max_rank"], 1);
  EXPECT_FALSE(s.contains("comm_s"));  // no rank sent it
  EXPECT_TRUE(agg.flush().empty());
}

TEST(StepAggregate, ASilentRankDoesNotHoldTheSummaryBackForever) {
  StepAggregator agg(3);
  // Rank 2 never reports. Step 1 stays open while steps 2 and 3 begin... until step 3 is the
  // newest: 1 <= 3 - 2, so it leaves with 2 ranks (median of 1.0 and 2.0 = 1.5) and 1 missing.
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(agg.add(r, step(1, 1.0 + r, 1)).empty());
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(agg.add(r, step(2, 1.0, 1)).empty());
  const auto done = agg.add(0, step(3, 1.0, 1));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0]["step"], 1);
  EXPECT_EQ(done[0]["ranks"], 2);
  EXPECT_EQ(done[0]["missing"], 1);
  EXPECT_DOUBLE_EQ(done[0]["step_s"]["median"].get<double>(), 1.5);
  // The attempt ends: steps 2 and 3 leave in order.
  const auto rest = agg.flush();
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0]["step"], 2);
  EXPECT_EQ(rest[1]["step"], 3);
  EXPECT_EQ(rest[1]["ranks"], 1);
}

TEST(StepAggregate, ARankReportingAStepTwiceCountsOnce) {
  StepAggregator agg(2);
  EXPECT_TRUE(agg.add(0, step(5, 1.0, 1)).empty());
  EXPECT_TRUE(agg.add(0, step(5, 1.0, 1)).empty());
  EXPECT_EQ(agg.add(1, step(5, 1.0, 1)).size(), 1u);
}

// Five ranks; compute seconds per step: ranks 0-3 take 1.0, 1.1, 0.9, 1.0 and rank 4 takes
// 2.0. The median of the others of rank 4 is that of 0.9, 1.0, 1.0, 1.1 = (1.0 + 1.0) / 2 = 1.0;
// 2.0 > 1.0 x 1.25 and 2.0 - 1.0 > 0.05: slow, reported at its third slow step. For rank 1
// (1.1) the others are 0.9, 1.0, 1.0, 2.0 with median 1.0: 1.1 < 1.25, not slow.
TEST(StepAggregate, StragglerMedianOfTheOthersFromOneSort) {
  HangOptions hang;
  RunTimings t;
  AttemptMonitor m(5, 0.0, hang, StragglerOptions{}, true);
  const double compute[5] = {1.0, 1.1, 0.9, 1.0, 2.0};
  std::optional<Straggler> found;
  for (std::int64_t s = 1; s <= 3; ++s) {
    for (int r = 0; r < 5; ++r) {
      auto f = m.observe(r, {{"type", "step"}, {"step", s}, {"step_s", compute[r]}},
                         static_cast<double>(s), t);
      if (f) {
        EXPECT_FALSE(found);
        found = f;
      }
    }
  }
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rank, 4);
  EXPECT_EQ(found->step, 3);
  EXPECT_DOUBLE_EQ(found->others_median_s, 1.0);
  EXPECT_DOUBLE_EQ(found->compute_s, 2.0);
  EXPECT_EQ(found->steps, 3);
}

}  // namespace
}  // namespace grpo::supervise
