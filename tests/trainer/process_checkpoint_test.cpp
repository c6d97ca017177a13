// grpo-trainer's checkpoint schedule and writer as real processes (docs/checkpoint-format.md
// "Asynchronous saves", docs/trainer.md "Checkpoint interval"): background writes produce the
// same files as synchronous ones, a writer that dies leaves the previous checkpoint, and
// trainer.save_freq = auto follows the Young-Daly rule from the MTBF the supervisor passes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "process_helpers.h"

namespace grpo::trainer::testing {
namespace {

nlohmann::json manifest(const fs::path& run_dir, const std::string& step_dir) {
  std::ifstream in(run_dir / "checkpoints" / step_dir / "manifest.json");
  return nlohmann::json::parse(in);
}

// The same run with background and with synchronous saves, on 2 ranks: identical final weights
// and byte-identical checkpoint files (by the manifests' SHA-256; config.toml differs by
// trainer.async_save itself). The SHA-256 the writer computes over its copy equals the one the
// step event computed over the live weights.
TEST(CheckpointProcess, AsyncSavesWriteWhatSyncSavesWrite) {
  const auto args = with(fast_args("tiny-dense"),
                         {"--set", "trainer.save_freq=2", "--set", "trainer.checksum_freq=1"});
  const fs::path a = fresh_dir("ckpt-async");
  const fs::path b = fresh_dir("ckpt-sync");
  auto ra = run_ranks(2, a, args);
  auto rb = run_ranks(2, b, with(args, {"--set", "trainer.async_save=false"}));
  expect_all_exit(ra, 0);
  expect_all_exit(rb, 0);
  ASSERT_FALSE(ra[0].final_sha().empty());
  EXPECT_EQ(ra[0].final_sha(), rb[0].final_sha());
  EXPECT_EQ(ra[1].final_sha(), rb[0].final_sha());

  const auto saved = ra[0].of_type("checkpoint_saved");
  ASSERT_EQ(saved.size(), 3u);
  const std::vector<bool> async = {true, true, false};  // periodic, periodic, final
  for (std::size_t i = 0; i < saved.size(); ++i) {
    const auto& e = saved[i];
    EXPECT_EQ(e["step"], 2 * static_cast<int>(i + 1));
    EXPECT_EQ(e["async"], async[i]);
    EXPECT_GE(e["blocking_s"].get<double>(), 0.0);
    EXPECT_GT(e["write_s"].get<double>(), 0.0);
    EXPECT_GE(e["seconds"].get<double>(), e["blocking_s"].get<double>());
    for (const auto& st : ra[0].of_type("step")) {
      if (st["step"] == e["step"]) {
        EXPECT_EQ(st["weights_sha256"], e["weights_sha256"]);
      }
    }
  }
  for (const auto& e : rb[0].of_type("checkpoint_saved")) {
    EXPECT_EQ(e["async"], false);
    EXPECT_EQ(e["blocking_s"], e["seconds"]);
  }
  for (const char* step : {"step_00000002", "step_00000004", "step_00000006"}) {
    auto fa = manifest(a, step)["files"];
    auto fb = manifest(b, step)["files"];
    fa.erase("config.toml");
    fb.erase("config.toml");
    EXPECT_EQ(fa, fb) << step;
    EXPECT_EQ(manifest(a, step)["metadata"]["weights_sha256"],
              manifest(b, step)["metadata"]["weights_sha256"]);
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

// The background writer of step 4 dies half way through model.safetensors (torn_ckpt fires in
// the writer thread while training goes on): only step 2's checkpoint is committed, and the
// next attempt resumes from it and ends with the uninterrupted run's weights.
TEST(CheckpointProcess, ADeadBackgroundWriterLeavesThePreviousCheckpoint) {
  const auto args = with(fast_args("tiny-dense"), {"--set", "trainer.save_freq=2"});
  const fs::path ref = fresh_dir("ckpt-torn-ref");
  auto whole = run_ranks(1, ref, args);
  expect_all_exit(whole, 0);
  const fs::path d = fresh_dir("ckpt-torn");
  auto r1 = run_ranks(1, d, with(args, {"--fault", "torn_ckpt@step=4"}));
  ASSERT_EQ(r1[0].exit_code, 6) << r1[0].stderr_text;
  const auto saved = r1[0].of_type("checkpoint_saved");
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0]["step"], 2);
  EXPECT_EQ(saved[0]["async"], true);
  EXPECT_FALSE(fs::exists(d / "checkpoints" / "step_00000004"));
  auto r2 = run_ranks(1, d, args);
  ASSERT_EQ(r2[0].exit_code, 0) << r2[0].stderr_text;
  EXPECT_EQ(r2[0].of_type("checkpoint_loaded").at(0)["step"], 2);
  EXPECT_EQ(r2[0].final_sha(), whole[0].final_sha());
  fs::remove_all(ref);
  fs::remove_all(d);
}

// The interval the test expects from an event's own numbers: round(sqrt(2 C M) / step_s),
// at least 1 step, at most the steps left (the formula written out again, not the trainer's).
std::int64_t expected_steps(const nlohmann::json& e, std::int64_t total) {
  const double t = std::sqrt(2.0 * e["cost_s"].get<double>() * e["mtbf_s"].get<double>());
  const std::int64_t left = total - e["step"].get<std::int64_t>();
  const auto steps = static_cast<std::int64_t>(std::llround(t / e["step_s"].get<double>()));
  return std::min(left, std::max<std::int64_t>(1, steps));
}

// trainer.save_freq = auto: the first step is saved (it measures the cost), then the interval
// is sqrt(2 x cost x MTBF) in steps. A huge MTBF postpones the next save to the end of the run;
// a tiny one (with synchronous saves: no write time to wait for) saves every step.
TEST(CheckpointProcess, SaveFreqAutoFollowsYoungDaly) {
  const auto args = with(fast_args("tiny-dense"), {"--set", "trainer.save_freq=auto"});
  const std::int64_t total = 6;
  const fs::path a = fresh_dir("ckpt-auto-rare");
  auto ra = run_ranks(1, a, args, {{"GRPO_MTBF_S", "1e9"}, {"GRPO_MTBF_SOURCE", "prior"}});
  expect_all_exit(ra, 0);
  auto choices = ra[0].of_type("save_interval");
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0]["next_save_step"], 1);
  EXPECT_EQ(choices[1]["step"], 1);
  EXPECT_EQ(choices[1]["cost"], "blocking");
  EXPECT_EQ(choices[1]["mtbf_s"], 1e9);
  EXPECT_EQ(choices[1]["mtbf_source"], "prior");
  EXPECT_EQ(choices[1]["interval_steps"], 5);
  EXPECT_EQ(choices[1]["next_save_step"], 6);
  EXPECT_NE(choices[1]["why"].get<std::string>().find("capped"), std::string::npos);
  std::vector<int> steps;
  for (const auto& e : ra[0].of_type("checkpoint_saved")) steps.push_back(e["step"]);
  EXPECT_EQ(steps, (std::vector<int>{1, 6}));

  const fs::path b = fresh_dir("ckpt-auto-often");
  auto rb = run_ranks(
      1, b, with(args, {"--set", "trainer.async_save=false"}),
      {{"GRPO_MTBF_S", "1e-6"}, {"GRPO_MTBF_SOURCE", "observed"}, {"GRPO_MTBF_FAILURES", "3"}});
  expect_all_exit(rb, 0);
  choices = rb[0].of_type("save_interval");
  ASSERT_EQ(choices.size(), 6u);  // the first step's, then after the saves of steps 1..5
  for (std::size_t i = 1; i < choices.size(); ++i) {
    const auto& e = choices[i];
    EXPECT_EQ(e["cost"], "full");
    EXPECT_EQ(e["mtbf_source"], "observed");
    EXPECT_EQ(e["failures"], 3);
    EXPECT_EQ(e["interval_steps"], expected_steps(e, total)) << e.dump();
    EXPECT_EQ(e["interval_steps"], 1);
  }
  // The step time is the mean wall time of the latest steps (at most 20), from the step events.
  std::map<std::int64_t, double> wall;
  for (const auto& e : rb[0].of_type("step")) wall[e["step"]] = e["wall_s"].get<double>();
  for (std::size_t i = 1; i < choices.size(); ++i) {
    const std::int64_t at = choices[i]["step"];
    double sum = 0;
    int n = 0;
    for (std::int64_t k = std::max<std::int64_t>(1, at - 19); k <= at; ++k, ++n) sum += wall.at(k);
    EXPECT_NEAR(choices[i]["step_s"].get<double>(), sum / n, 1e-6) << choices[i].dump();
  }
  steps.clear();
  for (const auto& e : rb[0].of_type("checkpoint_saved")) steps.push_back(e["step"]);
  EXPECT_EQ(steps, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  fs::remove_all(a);
  fs::remove_all(b);
}

}  // namespace
}  // namespace grpo::trainer::testing
