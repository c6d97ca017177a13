// grpo-trainer with kernels = "fused" and kernels = "reference" trains to the same result within
// tolerance: 2 SFT + 4 GRPO steps of tiny-moe (which exercises every fused op) and tiny-dense.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "process_helpers.h"

namespace grpo::trainer::testing {
namespace {

std::vector<nlohmann::json> steps_with(const std::string& model, const std::string& kernels) {
  std::vector<std::string> args = fast_args(model);
  args.insert(args.end(), {"--set", "kernels=" + kernels});
  const fs::path dir = fresh_dir("kernels-" + model + "-" + kernels);
  auto r = run_ranks(1, dir, args);
  EXPECT_EQ(r[0].exit_code, 0) << r[0].stderr_text;
  fs::remove_all(dir);
  return r[0].of_type("step");
}

// The keys every step of a phase must carry (docs/telemetry.md, "step"); a key missing from either
// side fails the test instead of being skipped.
std::vector<std::string> required_keys(const std::string& phase, bool moe) {
  std::vector<std::string> keys = {"tokens", "grad_norm"};
  if (phase == "sft") keys.push_back("sft_loss");
  if (phase == "grpo") {
    keys.insert(keys.end(),
                {"reward_mean", "generated_tokens", "loss", "pg_loss", "kl", "entropy"});
    if (moe) keys.push_back("aux_loss");
  }
  return keys;
}

void expect_same_training(const std::string& model, bool moe) {
  const auto fused = steps_with(model, "fused");
  const auto ref = steps_with(model, "reference");
  ASSERT_EQ(fused.size(), 6u);
  ASSERT_EQ(ref.size(), fused.size());
  const std::set<std::string> exact = {"reward_mean", "generated_tokens", "tokens"};
  for (std::size_t i = 0; i < fused.size(); ++i) {
    ASSERT_EQ(fused[i].value("phase", ""), ref[i].value("phase", "")) << "step " << i + 1;
    const std::string phase = ref[i].value("phase", "");
    EXPECT_EQ(phase, i < 2 ? "sft" : "grpo") << "step " << i + 1;
    for (const std::string& key : required_keys(phase, moe)) {
      ASSERT_TRUE(ref[i].contains(key)) << "reference step " << i + 1 << " lacks " << key;
      ASSERT_TRUE(fused[i].contains(key)) << "fused step " << i + 1 << " lacks " << key;
      if (exact.count(key)) {
        // Exact: what the sampled responses and counts decide.
        EXPECT_EQ(fused[i][key], ref[i][key]) << key << " step " << i + 1;
        continue;
      }
      const double a = fused[i][key].get<double>();
      const double b = ref[i][key].get<double>();
      EXPECT_LE(std::abs(a - b), 1e-4 * std::max(1.0, std::abs(b)))
          << model << " " << key << " step " << i + 1 << ": fused " << a << " reference " << b;
    }
  }
}

TEST(TrainerKernels, FusedAndReferenceTrainTheSameMoe) {
  expect_same_training("tiny-moe", true);
}

TEST(TrainerKernels, FusedAndReferenceTrainTheSameDense) {
  expect_same_training("tiny-dense", false);
}

}  // namespace
}  // namespace grpo::trainer::testing
