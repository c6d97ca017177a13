// Every diagnostic code the planner produces, each with a failing and a passing case.
#include <gtest/gtest.h>

#include <algorithm>

#include "grpo/plan/env_contract.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/planner.h"
#include "test_support.h"

namespace grpo::core {
namespace {

using test::layout;
using test::plan_with;

bool has(const std::vector<Diagnostic>& diags, DiagCode code) {
  return std::any_of(diags.begin(), diags.end(),
                     [&](const Diagnostic& d) { return d.code == code; });
}

std::vector<Diagnostic> legality(const std::string& model, const std::string& cluster,
                                 const Layout& l, std::vector<Override> sets = {}) {
  const auto c = test::cluster(cluster, std::move(sets));
  return check_legality(test::model(model), c, c.grpo, l);
}

TEST(Diagnostics, LegalLayoutHasNoFindings) {
  EXPECT_TRUE(legality("qwen2.5-7b", "a100x8", layout(2, 1, 4, 1, 1, 2, 2)).empty());
  EXPECT_TRUE(legality("qwen3-30b-moe", "a100x8", layout(2, 1, 4, 8, 1, 4, 4)).empty());
}

TEST(Diagnostics, TpMismatch) {
  // A warning: verl runs the reference in the actor's parallel state (engine_rules_test.cpp).
  Layout l = layout(2, 1, 4);
  l.ref_tp = 4;
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", l), DiagCode::kTpMismatch));
  EXPECT_FALSE(has_errors(legality("qwen2.5-7b", "a100x8", l)));
  l.ref_tp = 2;
  EXPECT_FALSE(has(legality("qwen2.5-7b", "a100x8", l), DiagCode::kTpMismatch));
  // Through the planner: the plan stands and reports it.
  const Plan p = plan_with("qwen2.5-7b", "a100x8", {"tp=2", "ref_tp=4"});
  EXPECT_TRUE(plan_ok(p));
  EXPECT_TRUE(has(p.diagnostics, DiagCode::kTpMismatch));
}

TEST(Diagnostics, WorldSizeMismatch) {
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", layout(4, 3, 1)), DiagCode::kWorldSizeMismatch));
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", layout(2, 1, 2)), DiagCode::kWorldSizeMismatch));
  EXPECT_FALSE(
      has(legality("qwen2.5-7b", "a100x8", layout(2, 2, 2)), DiagCode::kWorldSizeMismatch));
}

TEST(Diagnostics, HeadsNotDivisible) {
  // Qwen2.5-7B has 28 heads and 4 KV heads: TP=8 splits neither.
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", layout(8, 1, 1)), DiagCode::kHeadsNotDivisible));
  EXPECT_FALSE(
      has(legality("qwen2.5-7b", "a100x8", layout(4, 1, 2)), DiagCode::kHeadsNotDivisible));
  // Rollout TP against heads.
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", layout(2, 1, 4, 1, 1, 1, 8)),
                  DiagCode::kHeadsNotDivisible));
}

TEST(Diagnostics, KvHeadsNotDivisible) {
  // Qwen3-8B: 32 heads, 8 KV heads. TP=8 is fine; Qwen3-30B-A3B has 4 KV heads: TP=8 is not.
  EXPECT_FALSE(
      has(legality("qwen3-8b", "a100x8", layout(8, 1, 1)), DiagCode::kKvHeadsNotDivisible));
  EXPECT_TRUE(
      has(legality("qwen3-30b-moe", "a100x8", layout(8, 1, 1)), DiagCode::kKvHeadsNotDivisible));
  // vLLM replicates KV heads when rollout TP exceeds them (8 over 4 heads is fine)...
  EXPECT_FALSE(has(legality("qwen3-30b-moe", "a100x8", layout(2, 1, 4, 1, 1, 1, 8)),
                   DiagCode::kKvHeadsNotDivisible));
  // ...but not when neither divides the other: 8 KV heads over rollout TP 6 (12-GPU nodes).
  Layout six = layout(2, 1, 6, 1, 1, 1, 6);
  const auto d = legality("qwen3-8b", "a100x8", six, {{"gpus_per_node", "12"}});
  EXPECT_TRUE(has(d, DiagCode::kKvHeadsNotDivisible));
}

TEST(Diagnostics, LayersNotDivisible) {
  // Qwen3-235B-A22B has 94 layers: PP=4 needs an uneven split.
  const auto m = test::model("qwen3-235b-moe");
  EXPECT_EQ(m.num_layers, 94);
  auto c = test::cluster("moe-8node");
  Layout l = layout(4, 4, 4, 8);
  EXPECT_TRUE(has(check_legality(m, c, c.grpo, l), DiagCode::kLayersNotDivisible));
  l.first_stage_layers = 23;
  l.last_stage_layers = 23;
  EXPECT_FALSE(has(check_legality(m, c, c.grpo, l), DiagCode::kLayersNotDivisible));
  l.first_stage_layers = 22;  // 94 - 22 - 23 = 49 over 2 middle stages: not whole
  EXPECT_TRUE(has(check_legality(m, c, c.grpo, l), DiagCode::kLayersNotDivisible));
  // Only the first stage given: Megatron spreads the other 72 layers over 3 stages (22/24/24/24).
  l.last_stage_layers = 0;
  EXPECT_FALSE(has(check_legality(m, c, c.grpo, l), DiagCode::kLayersNotDivisible));
  EXPECT_EQ(stage_layers(m, l), (std::vector<int>{22, 24, 24, 24}));
  l.first_stage_layers = 23;  // 71 over 3 stages: not whole
  EXPECT_TRUE(has(check_legality(m, c, c.grpo, l), DiagCode::kLayersNotDivisible));
  EXPECT_EQ(uneven_split(94, 4), (std::pair{23, 23}));
  EXPECT_EQ(uneven_split(47, 2), (std::pair{23, 24}));
  EXPECT_EQ(uneven_split(94, 8), (std::pair{11, 11}));  // 6 middle stages of 12
  EXPECT_EQ(uneven_split(48, 4), (std::pair{0, 0}));
  EXPECT_EQ(uneven_split(94, 64), std::nullopt);  // 16/1.../16 would waste the pipeline
  EXPECT_EQ(stage_layers(m, l).size(), 4u);
}

TEST(Diagnostics, ExpertsNotDivisible) {
  // 128 experts: EP=3 does not divide them; EP=16 x PP=1 does not divide a world of 8.
  EXPECT_TRUE(
      has(legality("qwen3-30b-moe", "a100x8", layout(1, 1, 8, 3)), DiagCode::kExpertsNotDivisible));
  EXPECT_TRUE(has(legality("qwen3-30b-moe", "a100x8", layout(1, 1, 8, 16)),
                  DiagCode::kExpertsNotDivisible));
  EXPECT_FALSE(
      has(legality("qwen3-30b-moe", "a100x8", layout(1, 1, 8, 8)), DiagCode::kExpertsNotDivisible));
  // A dense model has no experts to split.
  EXPECT_TRUE(
      has(legality("qwen2.5-7b", "a100x8", layout(1, 1, 8, 2)), DiagCode::kExpertsNotDivisible));
}

TEST(Diagnostics, TpCrossesNode) {
  // Qwen2.5-72B has 64 heads and 8 KV heads; TP=16 on 8-GPU nodes would span two nodes.
  EXPECT_TRUE(
      has(legality("qwen2.5-72b", "a100-80g-x8", layout(16, 1, 4)), DiagCode::kTpCrossesNode));
  EXPECT_FALSE(
      has(legality("qwen2.5-72b", "a100-80g-x8", layout(8, 1, 8)), DiagCode::kTpCrossesNode));
}

TEST(Diagnostics, GroupSplit) {
  // Not a layout rule: verl computes the advantages on the driver, grouped by uid, so 100
  // prompts x 8 responses over DP = 8 are legal (the checker reports GROUP_SPLIT only for verl's
  // prefix grouper, check_corpus_test.cpp).
  EXPECT_FALSE(has(legality("qwen2.5-7b", "a100x8", layout(1, 1, 8),
                            {{"grpo.train_batch_size", "100"},
                             {"grpo.ppo_mini_batch_size", "100"},
                             {"grpo.rollout_n", "8"}}),
                   DiagCode::kGroupSplit));
}

TEST(Diagnostics, BatchNotDivisible) {
  // 256 prompts x 5 / DP 8 = 160 responses per rank: micro batch 3 does not divide it.
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", layout(1, 1, 8, 1, 1, 3)),
                  DiagCode::kBatchNotDivisible));
  EXPECT_FALSE(has(legality("qwen2.5-7b", "a100x8", layout(1, 1, 8, 1, 1, 4)),
                   DiagCode::kBatchNotDivisible));
  // 100 prompts x 5 responses do not split over 8 ranks at all: verl's chunking asserts.
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", layout(1, 1, 8),
                           {{"grpo.train_batch_size", "100"}, {"grpo.ppo_mini_batch_size", "100"}}),
                  DiagCode::kBatchNotDivisible));
  // train_batch_size not a multiple of the mini batch.
  EXPECT_TRUE(
      has(legality("qwen2.5-7b", "a100x8", layout(1, 1, 8), {{"grpo.ppo_mini_batch_size", "384"}}),
          DiagCode::kBatchNotDivisible));
}

TEST(Diagnostics, DtypeConflict) {
  EXPECT_TRUE(
      has(legality("qwen2.5-7b", "v100-32g-x8", layout(4, 1, 2)), DiagCode::kDtypeConflict));
  EXPECT_FALSE(has(legality("qwen2.5-7b", "v100-32g-x8", layout(4, 1, 2), {{"grpo.dtype", "fp16"}}),
                   DiagCode::kDtypeConflict));
  EXPECT_FALSE(has(legality("qwen2.5-7b", "a100x8", layout(4, 1, 2)), DiagCode::kDtypeConflict));
}

TEST(Diagnostics, InvalidSetting) {
  Layout l = layout(1, 1, 8);
  l.sequence_parallel = true;  // needs TP > 1
  EXPECT_TRUE(has(legality("qwen2.5-7b", "a100x8", l), DiagCode::kInvalidSetting));
  l.sequence_parallel = false;
  EXPECT_FALSE(has(legality("qwen2.5-7b", "a100x8", l), DiagCode::kInvalidSetting));
  // An MoE model with EP > 1 and TP > 1 needs sequence parallelism.
  Layout moe = layout(2, 1, 4, 8);
  moe.sequence_parallel = false;
  EXPECT_TRUE(has(legality("qwen3-30b-moe", "a100x8", moe), DiagCode::kInvalidSetting));
  moe.sequence_parallel = true;
  EXPECT_FALSE(has(legality("qwen3-30b-moe", "a100x8", moe), DiagCode::kInvalidSetting));
}

TEST(Diagnostics, OomRiskAndNoFeasiblePlan) {
  // Qwen2.5-72B forced onto one node with TP=8 and no offload cannot fit.
  const Plan p =
      plan_with("qwen2.5-72b", "a100x8",
                {"tp=8", "optimizer_offload=false", "cpu_optimizer=false", "param_offload=false"});
  EXPECT_FALSE(p.feasible);
  EXPECT_TRUE(has(p.diagnostics, DiagCode::kOomRisk));
  EXPECT_TRUE(has(p.diagnostics, DiagCode::kNoFeasiblePlan));
  // The layout the user fixed is reported as it is, never silently changed.
  EXPECT_EQ(p.best.layout.dims.tp, 8);
  const Plan ok = plan_with("qwen2.5-7b", "a100x8", {});
  EXPECT_TRUE(plan_ok(ok));
  EXPECT_FALSE(has(ok.diagnostics, DiagCode::kOomRisk));
  EXPECT_FALSE(has(ok.diagnostics, DiagCode::kNoFeasiblePlan));
}

TEST(Diagnostics, RolloutEngineThatCannotFitRaisesTheBudgetOrIsOomRisk) {
  // Qwen3-235B at rollout TP 8 needs 2 B x 235,093,634,560 / 8 = 54.7 GiB of weights per
  // device: more than 0.6 x 80 GiB. (Left free, the planner takes rollout TP 16 over two nodes;
  // engine_rules_test.cpp.) With TP 8 fixed, the planner raises gpu_memory_utilization itself
  // (its own fix) and says so in a note instead of refusing the cluster: 54.7 GiB / 80 GiB =
  // 0.684, plus the engine's workspace and one sequence's KV cache (about 1 GiB): the next
  // multiple of 0.05 is 0.70.
  const Plan p = plan_with("qwen3-235b-moe", "a100-80g-x8", {"rollout_tp=8"});
  EXPECT_TRUE(plan_ok(p));
  const auto it = std::find_if(p.diagnostics.begin(), p.diagnostics.end(), [](const Diagnostic& d) {
    return d.setting == "gpu_memory_utilization" && d.severity == Severity::kInfo;
  });
  ASSERT_NE(it, p.diagnostics.end());
  EXPECT_NE(it->message.find("from 0.60 to 0.70"), std::string::npos) << it->message;
  EXPECT_GE(p.workload.gpu_memory_utilization, 0.7);
  // Where no utilization up to 0.90 can hold the weights, it is an OOM_RISK error.
  const Plan no = plan_with("qwen3-235b-moe", "a100-40g-x4", {"nodes=1"});
  EXPECT_FALSE(no.feasible);
  EXPECT_TRUE(has(no.diagnostics, DiagCode::kOomRisk));
}

TEST(Diagnostics, EnvConflict) {
  auto c = test::cluster("a100x8", {{"env.CUDA_DEVICE_MAX_CONNECTIONS", "8"}});
  EXPECT_TRUE(has(build_env(c, layout(2, 1, 4)).diagnostics, DiagCode::kEnvConflict));
  EXPECT_FALSE(has(build_env(c, layout(1, 1, 8)).diagnostics, DiagCode::kEnvConflict));
  auto hca = test::cluster("a100x8", {{"env.NCCL_IB_HCA", "mlx5_9"}});
  EXPECT_TRUE(has(build_env(hca, layout(1, 1, 8)).diagnostics, DiagCode::kEnvConflict));
  auto visible = test::cluster("a100x8", {{"env.CUDA_VISIBLE_DEVICES", "0,1,2,3"}});
  EXPECT_TRUE(has(build_env(visible, layout(1, 1, 8)).diagnostics, DiagCode::kEnvConflict));
  EXPECT_FALSE(
      has(build_env(test::cluster("a100x8"), layout(2, 1, 4)).diagnostics, DiagCode::kEnvConflict));
  // Through the planner the conflict makes the plan not ok.
  const Plan p = plan_with("qwen2.5-7b", "a100x8", {"tp=2", "env.CUDA_DEVICE_MAX_CONNECTIONS=8"});
  EXPECT_TRUE(p.feasible);
  EXPECT_FALSE(plan_ok(p));
}

TEST(Diagnostics, KvCacheShortAndUnevenPipelineAreNotErrors) {
  const Plan p = plan_with("qwen3-30b-moe", "a100x8", {});
  ASSERT_TRUE(plan_ok(p));
  EXPECT_TRUE(has(p.diagnostics, DiagCode::kKvCacheShort));
  EXPECT_FALSE(has(plan_with("qwen3-30b-moe", "a100x8", {"grpo.max_num_seqs=64"}).diagnostics,
                   DiagCode::kKvCacheShort));
  const Plan uneven =
      plan_with("qwen3-235b-moe", "moe-8node", {"pp=4", "grpo.gpu_memory_utilization=0.8"});
  ASSERT_TRUE(uneven.feasible) << uneven.diagnostics.size();
  EXPECT_TRUE(has(uneven.diagnostics, DiagCode::kUnevenPipeline));
  EXPECT_EQ(uneven.best.layout.first_stage_layers, 23);
  EXPECT_FALSE(has(plan_with("qwen3-30b-moe", "moe-8node", {"pp=4"}).diagnostics,
                   DiagCode::kUnevenPipeline));
}

TEST(Diagnostics, EveryCodeHasAUniqueName) {
  std::set<std::string_view> names;
  for (const auto& info : all_diag_codes()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(to_string(info.code), info.name);
  }
}

}  // namespace
}  // namespace grpo::core
