// The plan's layout runs (label layouts): grpo-trainer processes at expert-parallel layouts give
// the same per-step loss, reward and gradient norm, and the same final weights, as the
// data-parallel run with the same seed and data (within 1e-5, fp32: the only difference is the
// order of floating-point sums); checkpoints move between layouts; layouts the trainer does not
// build are refused with one line.
//
// Why the data-parallel run at the same number of ranks is the oracle: expert parallelism does not
// change which examples a rank samples and scores (data parallelism splits them either way), only
// where each expert's computation happens. So every quantity of the EP run must equal the plain
// run's, which never exchanges tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "grpo/trainer/tensor_io.h"
#include "process_helpers.h"

namespace grpo::trainer::testing {
namespace {

// 2 SFT + 3 GRPO steps whose batches divide by 4 ranks.
std::vector<std::string> args_for(int ep) {
  return {"--model",
          "tiny-moe",
          "--set",
          "trainer.sft_warmup_steps=2",
          "--set",
          "trainer.total_training_steps=3",
          "--set",
          "trainer.sft_batch_size=8",
          "--set",
          "data.train_batch_size=4",
          "--set",
          "actor_rollout_ref.rollout.n=4",
          "--set",
          "actor_rollout_ref.actor.ppo_mini_batch_size=4",
          "--set",
          "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
          "--set",
          "actor_rollout_ref.actor.ppo_epochs=1",
          "--set",
          "data.val_size=8",
          "--set",
          "data.train_size=256",
          "--set",
          "trainer.test_freq=-1",
          "--set",
          "trainer.threads=1",
          "--set",
          "actor_rollout_ref.actor.megatron.expert_model_parallel_size=" + std::to_string(ep),
          "--log-level",
          "warn"};
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The newest committed checkpoint's model tensors.
NamedTensors final_weights(const fs::path& run_dir) {
  fs::path newest;
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints")) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step_", 0) == 0 && e.path().string() > newest.string()) newest = e.path();
  }
  auto t = from_safetensors(read_all(newest / "model.safetensors"));
  EXPECT_TRUE(t.ok()) << newest;
  return t.ok() ? std::move(t).value() : NamedTensors{};
}

void expect_near_field(const nlohmann::json& a, const nlohmann::json& b, const char* key,
                       std::int64_t step) {
  if (!a.contains(key) && !b.contains(key)) return;
  ASSERT_TRUE(a.contains(key) && b.contains(key)) << key << " at step " << step;
  EXPECT_NEAR(a[key].get<double>(), b[key].get<double>(), 1e-5) << key << " at step " << step;
}

// Per-step metrics of rank 0 (every step event carries the values reduced over all ranks).
void expect_same_steps(const RankResult& a, const RankResult& b) {
  const auto sa = a.of_type("step");
  const auto sb = b.of_type("step");
  ASSERT_EQ(sa.size(), sb.size());
  ASSERT_EQ(sa.size(), 5u);
  for (std::size_t i = 0; i < sa.size(); ++i) {
    const auto s = static_cast<std::int64_t>(i + 1);
    for (const char* k : {"sft_loss", "loss", "pg_loss", "kl", "entropy", "reward_mean",
                          "grad_norm", "aux_loss", "response_length"}) {
      expect_near_field(sa[i], sb[i], k, s);
    }
  }
}

void expect_same_weights(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first);
    ASSERT_TRUE(a[i].second.sizes().equals(b[i].second.sizes())) << a[i].first;
    const double diff = (a[i].second - b[i].second).abs().max().item<double>();
    EXPECT_LE(diff, 1e-5) << a[i].first;
  }
}

struct EpCase {
  int world;
  int ep;
};

void PrintTo(const EpCase& c, std::ostream* os) {
  *os << "EP=" << c.ep << " on " << c.world << " ranks";
}

class ExpertParallel : public ::testing::TestWithParam<EpCase> {};

TEST_P(ExpertParallel, EqualsDataParallel) {
  const auto [world, ep] = GetParam();
  const std::string tag = std::to_string(world) + "-" + std::to_string(ep);
  const fs::path a = fresh_dir("layout-dp-" + tag);
  const fs::path b = fresh_dir("layout-ep-" + tag);
  auto ra = run_ranks(world, a, args_for(1));
  auto rb = run_ranks(world, b, args_for(ep));
  expect_all_exit(ra, 0);
  expect_all_exit(rb, 0);
  const auto layout = rb[0].of_type("layout");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0]["ep"], ep);
  EXPECT_EQ(layout[0]["dp"], world);
  EXPECT_EQ(layout[0]["edp"], world / ep);
  EXPECT_EQ(layout[0]["experts_per_rank"], 8 / ep);
  expect_same_steps(ra[0], rb[0]);
  expect_same_weights(final_weights(a), final_weights(b));
  // Expert load is counted over the whole EP group: the same counts as without EP.
  const auto la = ra[0].of_type("expert_load");
  const auto lb = rb[0].of_type("expert_load");
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) {
    EXPECT_EQ(la[i]["tokens_per_expert"], lb[i]["tokens_per_expert"]) << i;
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ExpertParallel,
                         ::testing::Values(EpCase{2, 2}, EpCase{4, 4}, EpCase{4, 2}),
                         [](const auto& p) {
                           return "ep" + std::to_string(p.param.ep) + "_on_" +
                                  std::to_string(p.param.world) + "ranks";
                         });

// A checkpoint written at EP=2 resumes at EP=1 (and the reverse): the steps after the resume
// equal those of an uninterrupted run at the new layout.
TEST(Layouts, CheckpointsMoveBetweenLayouts) {
  for (const auto& [from, to] : {std::pair{2, 1}, std::pair{1, 2}}) {
    const std::string tag = std::to_string(from) + "-" + std::to_string(to);
    const fs::path plain = fresh_dir("layout-plain-" + tag);
    const fs::path moved = fresh_dir("layout-moved-" + tag);
    auto rp = run_ranks(2, plain, args_for(to));
    expect_all_exit(rp, 0);
    auto r1 = run_ranks(2, moved,
                        with(args_for(from), {"--set", "trainer.save_freq=3", "--fault",
                                              "exit@step=4,code=9,rank=0"}));
    ASSERT_EQ(r1[0].exit_code, 9) << r1[0].stderr_text;
    auto r2 = run_ranks(2, moved, args_for(to));
    expect_all_exit(r2, 0);
    const auto loaded = r2[0].of_type("checkpoint_loaded");
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0]["step"], 3);
    EXPECT_NE(loaded[0]["saved_layout"], loaded[0]["layout"]);
    const auto sp = rp[0].of_type("step");
    const auto sm = r2[0].of_type("step");
    ASSERT_EQ(sp.size(), 5u);
    ASSERT_EQ(sm.size(), 2u);  // steps 4 and 5
    for (std::size_t i = 0; i < 2; ++i) {
      for (const char* k : {"loss", "reward_mean", "grad_norm", "kl"}) {
        expect_near_field(sp[3 + i], sm[i], k, static_cast<std::int64_t>(4 + i));
      }
    }
    expect_same_weights(final_weights(plain), final_weights(moved));
    fs::remove_all(plain);
    fs::remove_all(moved);
  }
}

// Layouts the embedded trainer does not build end the run at start-up with one line, exit 2.
TEST(Layouts, UnbuiltLayoutsAreRefusedWithOneLine) {
  const fs::path d = fresh_dir("layout-refused");
  auto r =
      run_ranks(2, d,
                with(args_for(1),
                     {"--set", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"}));
  expect_all_exit(r, 2);
  EXPECT_NE(r[0].stderr_text.find("the embedded trainer runs data and expert parallelism only; "
                                  "this layout needs TP=2"),
            std::string::npos)
      << r[0].stderr_text;
  auto dense = run_ranks(
      2, d,
      {"--model", "tiny-dense", "--set",
       "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2", "--log-level", "warn"});
  expect_all_exit(dense, 2);
  EXPECT_NE(dense[0].stderr_text.find("EP=2 needs a mixture-of-experts model"), std::string::npos)
      << dense[0].stderr_text;
  fs::remove_all(d);
}

}  // namespace
}  // namespace grpo::trainer::testing
