// How a resumed grpo-trainer gets its checkpoint (docs/checkpoint-format.md "Resuming"), as real
// processes on 2 ranks: every rank verifies and reads the checkpoint itself, so a corrupted file
// is detected by every rank; ranks that see different run directories take rank 0's checkpoint
// by broadcast, and that resume is still bit-exact.
#include <gtest/gtest.h>

#include "process_helpers.h"

namespace grpo::trainer::testing {
namespace {

bool mentions(const std::string& text, const std::string& a, const std::string& b) {
  std::size_t pos = 0;
  while ((pos = text.find(a, pos)) != std::string::npos) {
    const std::size_t eol = text.find('\n', pos);
    if (text.substr(pos, eol - pos).find(b) != std::string::npos) return true;
    pos = eol;
  }
  return false;
}

// Step 4's checkpoint is corrupted after its commit and rank 0 crashes at step 5; the restarted
// ranks both skip step 4 (each verified model.safetensors itself) and both read step 2's
// checkpoint from the run directory (source "own", no broadcast).
TEST(ResumeProcess, EveryRankVerifiesWhatItReadsAndSkipsACorruptCheckpoint) {
  const fs::path d = fresh_dir("resume-corrupt-2");
  const auto args = with(fast_args("tiny-dense"), {"--set", "trainer.save_freq=2"});
  auto r1 = run_ranks(
      2, d, with(args, {"--fault", "corrupt_ckpt@step=4", "--fault", "crash@step=5,rank=0"}));
  ASSERT_EQ(r1[0].exit_code, 6) << r1[0].stderr_text;
  auto r2 = run_ranks(2, d, args);
  expect_all_exit(r2, 0);
  for (int r = 0; r < 2; ++r) {
    const RankResult& res = r2[static_cast<std::size_t>(r)];
    EXPECT_TRUE(mentions(res.stderr_text, "skipping checkpoint", "step_00000004"))
        << "rank " << r << ":\n"
        << res.stderr_text;
    EXPECT_TRUE(mentions(res.stderr_text, "skipping checkpoint", "SHA-256")) << res.stderr_text;
    const auto loaded = res.of_type("checkpoint_loaded");
    ASSERT_EQ(loaded.size(), 1u) << "rank " << r;
    EXPECT_EQ(loaded[0]["step"], 2);
    EXPECT_EQ(loaded[0]["source"], "own");
    EXPECT_GE(loaded[0]["look_s"].get<double>(), 0.0);
    EXPECT_GE(loaded[0]["seconds"].get<double>(), loaded[0]["read_s"].get<double>());
  }
  // The event comes once, from rank 0.
  EXPECT_EQ(r2[0].of_type("checkpoint_skipped").size(), 1u);
  EXPECT_TRUE(r2[1].of_type("checkpoint_skipped").empty());
  EXPECT_EQ(r2[0].final_sha(), r2[1].final_sha());
  fs::remove_all(d);
}

// Rank 1 runs in a run directory of its own (as on nodes without a shared file system): it finds
// no checkpoint, rank 0 finds step 3's, so rank 0 reads it and broadcasts it. The resumed run
// ends with the uninterrupted run's weights, byte for byte.
TEST(ResumeProcess, RanksThatSeeDifferentRunDirectoriesTakeRank0sCheckpoint) {
  const auto args =
      with(fast_args("tiny-dense"), {"--set", "trainer.save_freq=3", "--set", "trainer.seed=7"});
  const fs::path a = fresh_dir("resume-split-a");
  auto ra = run_ranks(2, a, args);
  expect_all_exit(ra, 0);
  const std::string want = ra[0].final_sha();
  ASSERT_FALSE(want.empty());

  const fs::path b = fresh_dir("resume-split-b");
  const std::vector<fs::path> dirs = {b, b / "rank1-own-run-dir"};
  auto rb1 =
      wait_ranks(start_ranks(2, b, with(args, {"--fault", "crash@step=5,rank=0"}), {}, dirs), b);
  ASSERT_EQ(rb1[0].exit_code, 6) << rb1[0].stderr_text;
  auto rb2 = wait_ranks(start_ranks(2, b, args, {}, dirs), b);
  expect_all_exit(rb2, 0);
  EXPECT_NE(rb2[0].stderr_text.find("the ranks found different checkpoints"), std::string::npos)
      << rb2[0].stderr_text;
  for (const auto& res : rb2) {
    const auto loaded = res.of_type("checkpoint_loaded");
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0]["step"], 3);
    EXPECT_EQ(loaded[0]["source"], "rank0");
    EXPECT_EQ(res.final_sha(), want) << "resumed run differs";
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

}  // namespace
}  // namespace grpo::trainer::testing
