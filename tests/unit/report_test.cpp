// The HTML report: every chart from a real-shaped event log, self-contained (no scripts, nothing
// fetched), and sane on an empty log.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "grpo/report/report.h"
#include "grpo/supervise/event_log.h"
#include "test_support.h"

namespace grpo::report {
namespace {

std::vector<nlohmann::json> sample() {
  return supervise::read_event_log(test::source_dir() / "tests/report/sample-run/events.jsonl")
      .value()
      .events;
}

TEST(Report, EveryChartHasDataFromTheSampleRun) {
  const Report r = render_report(sample(), {"runs/x", 0});
  ASSERT_EQ(r.charts.size(), 11u);  // 6 line charts, 4 MoE layers, the timeline
  for (const auto& c : r.charts) EXPECT_GT(c.points, 0) << c.id;
  EXPECT_EQ(r.charts.front().id, "chart-reward");
  EXPECT_EQ(r.charts.back().id, "chart-timeline");
  // Two ranks in the per-rank charts.
  EXPECT_NE(r.html.find("data-name=\"rank 1\""), std::string::npos);
  // The restart shows as a marker at the resumed step and on the timeline.
  EXPECT_NE(r.html.find("<title>attempt 2</title>"), std::string::npos);
  EXPECT_NE(r.html.find("class=\"failure\""), std::string::npos);
  EXPECT_NE(r.html.find("class=\"decision\""), std::string::npos);
}

TEST(Report, IsSelfContained) {
  const Report r = render_report(sample(), {"runs/<x>", 0});
  EXPECT_EQ(r.html.find("<script"), std::string::npos);
  EXPECT_EQ(r.html.find("<link"), std::string::npos);
  EXPECT_EQ(r.html.find(" src="), std::string::npos);
  EXPECT_EQ(r.html.find("href="), std::string::npos);
  EXPECT_EQ(r.html.find("https://"), std::string::npos);
  EXPECT_NE(r.html.find("runs/&lt;x&gt;"), std::string::npos);  // escaped
}

TEST(Report, EmptyLogGivesFramesThatSaySo) {
  const Report r = render_report({}, {"empty", 0});
  ASSERT_FALSE(r.charts.empty());
  for (const auto& c : r.charts) EXPECT_EQ(c.points, 0) << c.id;
  EXPECT_NE(r.html.find("no data in the event log"), std::string::npos);
  EXPECT_NE(r.html.find("</html>"), std::string::npos);
}

TEST(Report, RedoneStepsReplaceLostOnes) {
  // Steps 11 and 12 ran twice (attempt 1, then again after resuming from 10): one point each.
  const Report r = render_report(sample(), {"x", 0});
  EXPECT_EQ(r.charts[1].id, "chart-loss");
  EXPECT_EQ(r.charts[1].points, 30);
}

}  // namespace
}  // namespace grpo::report
