// `grpo-launch status --format json` (supervise::status_json, status_list_json) against the
// fields docs/run-visibility.md documents, from summaries written by hand.
#include <gtest/gtest.h>

#include "grpo/runlog/run_view.h"

namespace grpo::supervise {
namespace {

TEST(StatusJson, OneRunHasTheDocumentedFields) {
  RunSummary s;
  s.started = true;
  s.state = RunState::kSucceeded;
  s.last_step = 12;
  s.total_steps = 40;
  s.reward = 0.5;
  s.layout = "TP=2 PP=1 CP=1 DP=1 EP=1 ETP=1";
  const nlohmann::json j = status_json(s, "/runs/a", true, 100.0);
  EXPECT_EQ(j.at("schema"), "grpo-launch/status/v1");
  EXPECT_EQ(j.at("run_dir"), "/runs/a");
  EXPECT_EQ(j.at("state"), "succeeded");
  EXPECT_EQ(j.at("step"), 12);
  EXPECT_EQ(j.at("total_steps"), 40);
  EXPECT_EQ(j.at("reward"), 0.5);
  EXPECT_EQ(j.at("layout"), s.layout);
  EXPECT_TRUE(j.at("torn_log").get<bool>());
  EXPECT_TRUE(j.at("exit_code").is_null());
  EXPECT_TRUE(j.at("attempts").is_array());
  // No events, no wall time: nothing lost, the ratio is 1 (run_view.h effective_ratio).
  EXPECT_EQ(j.at("lost_s"), 0.0);
  EXPECT_EQ(j.at("effective_ratio"), 1.0);
  // Absent, not null, when unknown.
  EXPECT_FALSE(j.contains("val_reward"));
  EXPECT_FALSE(j.contains("hf_export"));
}

TEST(StatusJson, ListSaysWhichRunsCouldNotBeRead) {
  RunSummary fresh;  // submitted, no run_started yet
  std::vector<RunListEntry> runs{{"a", fresh, "", "/runs/a"},
                                 {"b", std::nullopt, "not JSON", "/runs/b"}};
  const nlohmann::json j = status_list_json(runs, 100.0);
  EXPECT_EQ(j.at("schema"), "grpo-launch/status-list/v1");
  ASSERT_EQ(j.at("runs").size(), 2u);
  EXPECT_EQ(j["runs"][0].at("run_dir"), "/runs/a");
  EXPECT_EQ(j["runs"][0].at("state"), "not started");
  EXPECT_EQ(j["runs"][1].at("state"), "unreadable");
  EXPECT_EQ(j["runs"][1].at("error"), "not JSON");
}

}  // namespace
}  // namespace grpo::supervise
