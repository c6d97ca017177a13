// grpo-trainer with kernels = "fused" and kernels = "reference" trains to the same result within
// tolerance: 2 SFT + 4 GRPO steps of tiny-moe (which exercises every fused op) and tiny-dense.
#include <gtest/gtest.h>

#include <cmath>

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

void expect_same_training(const std::string& model) {
  const auto fused = steps_with(model, "fused");
  const auto ref = steps_with(model, "reference");
  ASSERT_EQ(fused.size(), 6u);
  ASSERT_EQ(ref.size(), fused.size());
  for (std::size_t i = 0; i < fused.size(); ++i) {
    // Exact: what the sampled responses and counts decide.
    for (const char* key : {"reward_mean", "generated_tokens", "tokens"}) {
      if (!ref[i].contains(key)) continue;
      EXPECT_EQ(fused[i][key], ref[i][key]) << key << " step " << i + 1;
    }
    for (const char* key :
         {"sft_loss", "loss", "pg_loss", "kl", "entropy", "aux_loss", "grad_norm"}) {
      if (!ref[i].contains(key)) continue;
      const double a = fused[i][key].get<double>();
      const double b = ref[i][key].get<double>();
      EXPECT_LE(std::abs(a - b), 1e-4 * std::max(1.0, std::abs(b)))
          << model << " " << key << " step " << i + 1 << ": fused " << a << " reference " << b;
    }
  }
}

TEST(TrainerKernels, FusedAndReferenceTrainTheSameMoe) {
  expect_same_training("tiny-moe");
}

TEST(TrainerKernels, FusedAndReferenceTrainTheSameDense) {
  expect_same_training("tiny-dense");
}

}  // namespace
}  // namespace grpo::trainer::testing
