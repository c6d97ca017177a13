// The HTML report: every chart from a real-shaped event log, self-contained (no scripts, nothing
// fetched), and sane on an empty log.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "grpo/report/report.h"
#include "grpo/runlog/event_log.h"
#include "grpo/supervise/event_log_file.h"
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

// Values that differ by less than an axis step's float resolution: 1e17 and 1e17 + 16 (the next
// doubles) put ticks 5 apart on an axis where adding 5 changes nothing. The tick loop once never
// ended (growing until memory ran out); now each axis has at most a fixed number of ticks.
TEST(Report, AxisBelowTheFloatResolutionEnds) {
  std::vector<nlohmann::json> events;
  const double values[] = {1e17, 1e17 + 16, 1e300, -1e300};
  for (int i = 0; i < 4; ++i) {
    events.push_back({{"type", "step"},
                      {"source", "trainer"},
                      {"attempt", 1},
                      {"rank", 0},
                      {"step", i < 2 ? i + 1 : 1'000'000'000'000'000 + i},
                      {"loss", values[i]},
                      {"reward_mean", values[i]},
                      {"kl", values[i]},
                      {"step_s", 1.0},
                      {"seq", i},
                      {"time", 1.0 + i}});
  }
  const Report r = render_report(events, {"x", 0});
  EXPECT_EQ(r.charts[1].id, "chart-loss");
  EXPECT_LT(r.html.size(), 1u << 20);
  // One chart's ticks: at most 4 n + 1 (n = 5 on the y axis) labels.
  EXPECT_NE(r.html.find("</html>"), std::string::npos);
}

TEST(Report, RedoneStepsReplaceLostOnes) {
  // Steps 11 and 12 ran twice (attempt 1, then again after resuming from 10): one point each.
  const Report r = render_report(sample(), {"x", 0});
  EXPECT_EQ(r.charts[1].id, "chart-loss");
  EXPECT_EQ(r.charts[1].points, 30);
}

// report RUN1 RUN2: a second run made from the sample (rewards halved, every time stretched 2x):
// each chart has one series per run, with the points counted here from the raw JSONL by hand
// (rank 0's distinct steps; goodput: every rank-0 step event, redone steps included).
TEST(Report, ComparisonOverlaysOneSeriesPerRun) {
  const auto a = sample();
  std::vector<nlohmann::json> b = a;
  for (auto& e : b) {
    if (e.contains("time")) e["time"] = 1764440000.0 + 2 * (e["time"].get<double>() - 1764440000.0);
    if (e.contains("reward_mean")) e["reward_mean"] = e["reward_mean"].get<double>() / 2;
  }
  std::set<std::int64_t> distinct;
  std::size_t rank0_events = 0;
  std::istringstream raw(
      test::read_text(test::source_dir() / "tests/report/sample-run/events.jsonl"));
  for (std::string line; std::getline(raw, line);) {
    const auto e = nlohmann::json::parse(line);
    if (e["type"] != "step" || e.value("rank", 0) != 0) continue;
    distinct.insert(e["step"].get<std::int64_t>());
    ++rank0_events;
  }
  ASSERT_EQ(distinct.size(), 30u);
  ASSERT_EQ(rank0_events, 32u);  // steps 11 and 12 ran twice (the restart)
  const Report r = render_comparison({{"runs/a", a}, {"runs/<b>", b}}, {"2 runs", 0});
  ASSERT_EQ(r.charts.size(), 4u);
  const std::vector<std::string> ids = {"chart-reward", "chart-loss", "chart-throughput",
                                        "chart-goodput"};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(r.charts[i].id, ids[i]);
    EXPECT_EQ(r.charts[i].points, static_cast<int>(2 * (i == 3 ? rank0_events : distinct.size())))
        << ids[i];
  }
  EXPECT_NE(r.html.find("data-name=\"run 1\""), std::string::npos);
  EXPECT_NE(r.html.find("data-name=\"run 2\""), std::string::npos);
  EXPECT_NE(r.html.find("runs/&lt;b&gt;"), std::string::npos);  // escaped
  EXPECT_NE(r.html.find("restarts 1"), std::string::npos);
  EXPECT_EQ(r.html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace grpo::report
