// The search: legal and fitting winners, fixed layouts checked not searched, the seeds'
// decision tree as an outcome (docs/decision-tree.md explains each disagreement).
#include <gtest/gtest.h>

#include "grpo/plan/plan_render.h"
#include "grpo/plan/planner.h"
#include "test_support.h"

namespace grpo::core {
namespace {

using test::plan_with;

TEST(Planner, DesignCardExampleIsLegalAndFits) {
  const Plan p = plan_with("qwen3-30b-moe", "a100x8", {});
  ASSERT_TRUE(plan_ok(p));
  const Layout& l = p.best.layout;
  EXPECT_TRUE(check_legality(p.model, p.cluster, p.workload, l).empty());
  EXPECT_TRUE(p.best.memory.fits());
  EXPECT_EQ(l.dims.world_size(), 8);
  EXPECT_GT(l.dims.ep, 1) << "an MoE model on one node should use expert parallelism";
  const std::string text = render_summary(p);
  EXPECT_NE(text.find("Parallel Config Summary"), std::string::npos);
  EXPECT_NE(text.find("Memory per device"), std::string::npos);
  EXPECT_NE(text.find("Rejected"), std::string::npos);
  // Every alternative is legal, fits, and is not faster than the winner.
  for (const auto& a : p.alternatives) {
    EXPECT_TRUE(check_legality(p.model, p.cluster, p.workload, a.layout).empty());
    EXPECT_TRUE(a.memory.fits());
    EXPECT_GE(a.cost.step_s, p.best.cost.step_s);
  }
}

TEST(Planner, JsonCarriesPlanEstimateRankMapAndEnv) {
  const Plan p = plan_with("qwen3-30b-moe", "a100x8", {});
  const auto j = plan_to_json(p);
  EXPECT_EQ(j["schema"], "grpo-launch/plan/v1");
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["plan"]["layout"]["ep"], p.best.layout.dims.ep);
  EXPECT_TRUE(j["plan"]["memory"]["training"]["items_gib"].contains("activations"));
  EXPECT_EQ(j["rank_map"]["ranks"].size(), 8u);
  EXPECT_EQ(j["env"]["job"]["OMP_NUM_THREADS"], "16");
}

TEST(Planner, FixedLayoutIsCheckedNotSearched) {
  const Plan p =
      plan_with("qwen2.5-7b", "a100x8", {"tp=4", "pp=1", "micro_batch=2", "rollout_tp=2"});
  ASSERT_TRUE(plan_ok(p));
  EXPECT_EQ(p.best.layout.dims.tp, 4);
  EXPECT_EQ(p.best.layout.dims.pp, 1);
  EXPECT_EQ(p.best.layout.micro_batch, 2);
  EXPECT_EQ(p.best.layout.rollout_tp, 2);
  EXPECT_EQ(p.stats.structural, 1);
  // An illegal fixed value is reported with its code, not replaced by a legal one.
  const Plan bad = plan_with("qwen2.5-7b", "a100x8", {"tp=3"});
  EXPECT_FALSE(bad.feasible);
  bool heads = false;
  for (const auto& d : bad.diagnostics) heads |= d.code == DiagCode::kHeadsNotDivisible;
  EXPECT_TRUE(heads);
  const Plan micro = plan_with("qwen2.5-7b", "a100x8", {"micro_batch=3"});
  EXPECT_FALSE(micro.feasible);
}

TEST(Planner, UnevenPipelineForQwen3_235b) {
  const Plan p =
      plan_with("qwen3-235b-moe", "moe-8node", {"pp=8", "grpo.gpu_memory_utilization=0.8"});
  ASSERT_TRUE(p.feasible);
  const auto stages = stage_layers(p.model, p.best.layout);
  int sum = 0;
  for (int s : stages) sum += s;
  EXPECT_EQ(sum, 94);
  EXPECT_EQ(stages.size(), 8u);
  EXPECT_EQ(p.best.layout.first_stage_layers + p.best.layout.last_stage_layers + 6 * stages[1], 94);
}

TEST(Planner, SearchIsDeterministic) {
  const Plan a = plan_with("qwen3-30b-moe", "moe-8node", {});
  const Plan b = plan_with("qwen3-30b-moe", "moe-8node", {});
  EXPECT_EQ(render_summary(a), render_summary(b));
}

TEST(Planner, RankMapKeepsTpInsideNodes) {
  for (const char* model : {"qwen2.5-72b", "qwen3-30b-moe", "qwen2.5-7b"}) {
    const Plan p = plan_with(model, "a100-80g-x8", {"nodes=16"});
    ASSERT_TRUE(p.feasible) << model;
    EXPECT_TRUE(tp_groups_within_nodes(p.rank_map)) << model;
    EXPECT_EQ(p.rank_map.world_size(), 128);
  }
}

// Parameters per device of Qwen2.5-7B, by hand from its config.json (hidden 3584, FFN 18944, 28
// layers, 28 heads / 4 KV heads of 128, vocabulary 152064, untied embeddings, QKV bias):
//   attention per layer  2*3584^2 + 2*3584*512 + 3584 + 2*512 = 29,364,736
//   SwiGLU per layer     3*3584*18944                          = 203,685,888
//   two RMSNorms         2*3584                                = 7,168 (replicated over TP)
//   embedding, LM head   152064*3584                           = 544,997,376 each
//   final norm           3584
// Megatron splits attention, MLP, embedding and LM head over TP:
//   P(t) = 28 * ((29,364,736 + 203,685,888) / t + 7,168) + 2 * 544,997,376 / t + 3,584
//   P(2) = 3,807,910,400 (docs/cost-model.md uses it)   P(4) = 1,904,057,344
// Bytes: bf16 weights 2 P, fp32 main gradients 4 P, Adam (fp32 master + two moments) 12 P sharded
// over DP by the distributed optimizer (verl's Megatron default).
TEST(Planner, ShardedStateOfAFixedLayoutByHand) {
  const Plan p =
      plan_with("qwen2.5-7b", "a100x8", {"tp=4", "pp=1", "micro_batch=2", "rollout_tp=2"});
  ASSERT_TRUE(plan_ok(p));
  const Layout& l = p.best.layout;
  EXPECT_EQ(l.dims.dp, 2);  // 8 devices / TP 4
  ASSERT_TRUE(l.distributed_optimizer);
  const double params = 1'904'057'344.0;
  EXPECT_DOUBLE_EQ(p.best.memory.actor.total(), params);
  EXPECT_DOUBLE_EQ(p.best.memory.training.bytes("actor weights"), 2.0 * params);
  EXPECT_DOUBLE_EQ(p.best.memory.training.bytes("actor gradients"), 4.0 * params);
  EXPECT_DOUBLE_EQ(p.best.memory.training.bytes("actor optimizer states"), 12.0 * params / 2.0);
  // Megatron's rank order, TP fastest: global rank 5 = TP rank 1 of DP replica 1 (5 = 1 + 4 * 1).
  ASSERT_EQ(p.rank_map.world_size(), 8);
  EXPECT_EQ(p.rank_map.ranks[5].tp, 1);
  EXPECT_EQ(p.rank_map.ranks[5].dp, 1);
  EXPECT_EQ(p.rank_map.ranks[3].tp, 3);
  EXPECT_EQ(p.rank_map.ranks[3].dp, 0);
  const Plan tp2 =
      plan_with("qwen2.5-7b", "a100x8", {"tp=2", "pp=1", "micro_batch=2", "rollout_tp=2"});
  EXPECT_DOUBLE_EQ(tp2.best.memory.actor.total(), 3'807'910'400.0);
}

// Qwen3-30B-A3B has 4 KV heads (config.json num_key_value_heads): Megatron-Core needs the query
// groups divisible by TP, so TP = 8 on one 8-GPU node is illegal and says why.
TEST(Planner, KvHeadsRuleByHand) {
  const Plan p = plan_with("qwen3-30b-moe", "a100x8", {"tp=8"});
  EXPECT_FALSE(p.feasible);
  bool kv = false;
  for (const auto& d : p.diagnostics) kv |= d.code == DiagCode::kKvHeadsNotDivisible;
  EXPECT_TRUE(kv);
  EXPECT_TRUE(plan_ok(plan_with("qwen3-30b-moe", "a100x8", {"tp=4"})));
}

// docs/cost-model.md, "Worked example": every term there is computed by hand from the formulas
// and the profile's figures; the estimate must reproduce them to the digits printed.
TEST(CostModel, WorkedExampleOfTheDocs) {
  const std::vector<std::string> layout = {"tp=2",
                                           "pp=1",
                                           "micro_batch=2",
                                           "rollout_tp=2",
                                           "param_offload=false",
                                           "optimizer_offload=false",
                                           "cpu_optimizer=false",
                                           "recompute=none"};
  const CostEstimate c = plan_with("qwen2.5-7b", "a100x8", layout).best.cost;
  EXPECT_NEAR(c.compute_s, 369.9, 0.05);
  EXPECT_NEAR(c.logprob_s, 246.6, 0.05);
  EXPECT_NEAR(c.tp_comm_s, 10.71, 0.005);
  EXPECT_NEAR(c.dp_comm_s, 0.228, 0.0005);
  // The bytes behind those times (the doc's "bytes per step" rows).
  EXPECT_DOUBLE_EQ(c.bytes.tp, 3'213'172'408'320.0);
  EXPECT_DOUBLE_EQ(c.bytes.dp, 45'694'924'800.0);
  EXPECT_DOUBLE_EQ(c.bytes.ep, 0.0);
  EXPECT_DOUBLE_EQ(c.bytes.pp, 0.0);
  EXPECT_NEAR(c.rollout_s, 267.3, 0.05);
  EXPECT_NEAR(c.step_s, 894.7, 0.05);
  EXPECT_NEAR(c.mfu, 0.304, 0.0005);
  EXPECT_DOUBLE_EQ(c.offload_s, 0.0);
  // The offload table of the same section (host link 25 GB/s).
  const auto offload_s = [&](std::vector<std::string> sets) {
    std::vector<std::string> all = {"tp=2", "pp=1", "micro_batch=2", "rollout_tp=2",
                                    "recompute=none"};
    all.insert(all.end(), sets.begin(), sets.end());
    return plan_with("qwen2.5-7b", "a100x8", all).best.cost.offload_s;
  };
  EXPECT_NEAR(offload_s({"param_offload=false", "optimizer_offload=true", "cpu_optimizer=false"}),
              0.914, 0.0005);
  EXPECT_NEAR(offload_s({"param_offload=true", "optimizer_offload=false", "cpu_optimizer=false"}),
              2.437, 0.0005);
  EXPECT_NEAR(offload_s({"param_offload=true", "optimizer_offload=true", "cpu_optimizer=false"}),
              3.351, 0.0005);
  EXPECT_NEAR(offload_s({"param_offload=true", "optimizer_offload=false", "cpu_optimizer=true"}),
              7.159, 0.0005);
}

// The rule of thumb of the design notes the project started from: under 10B data parallel; 10-100B
// TP x DP; over 100B TP x PP x DP; over 8 nodes hierarchical communication. The search must reach
// its answers on its own; where it disagrees, docs/decision-tree.md says why (the `why` column
// names the section).
enum class Shape { kDp, kTpDp, kPpDp, kTpPpDp };
Shape shape_of(const Layout& l) {
  if (l.dims.pp > 1) return l.dims.tp > 1 ? Shape::kTpPpDp : Shape::kPpDp;
  return l.dims.tp > 1 ? Shape::kTpDp : Shape::kDp;
}
const char* name(Shape s) {
  switch (s) {
    case Shape::kDp:
      return "DP";
    case Shape::kTpDp:
      return "TPxDP";
    case Shape::kPpDp:
      return "PPxDP";
    case Shape::kTpPpDp:
      return "TPxPPxDP";
  }
  return "?";
}
Shape rule_of_thumb(double params) {
  if (params < 10e9) return Shape::kDp;
  if (params <= 100e9) return Shape::kTpDp;
  return Shape::kTpPpDp;
}

struct TreeCase {
  const char* model;
  const char* cluster;
  int nodes;
  Shape expected;
  const char* why;  // empty when the search agrees with the rule
  std::vector<std::string> extra = {};
};

TEST(Planner, DecisionTreeComesOutOfTheSearch) {
  const std::vector<std::string> util = {"grpo.gpu_memory_utilization=0.8"};
  const std::vector<TreeCase> cases = {
      {"qwen2.5-0.5b", "a100-80g-x8", 1, Shape::kDp, ""},
      {"qwen2.5-0.5b", "a100-80g-x8", 16, Shape::kDp, ""},
      {"qwen2.5-3b", "a100-80g-x8", 1, Shape::kDp, ""},
      {"qwen2.5-3b", "a100-80g-x8", 4, Shape::kDp, ""},
      {"qwen2.5-7b", "a100-80g-x8", 1, Shape::kTpDp, "small-dense-tp"},
      {"qwen2.5-7b", "a100-40g-x4", 4, Shape::kTpDp, "small-dense-tp"},
      {"qwen3-8b", "a100-80g-x8", 4, Shape::kTpDp, "small-dense-tp"},
      {"qwen2.5-14b", "a100-80g-x8", 4, Shape::kTpDp, ""},
      {"qwen2.5-14b", "a100-80g-x8", 1, Shape::kTpPpDp, "pp-when-state-does-not-fit"},
      {"qwen2.5-32b", "a100-80g-x8", 16, Shape::kTpDp, ""},
      {"qwen2.5-32b", "a100-80g-x8", 4, Shape::kTpPpDp, "pp-when-state-does-not-fit"},
      {"qwen2.5-72b", "a100-80g-x8", 16, Shape::kTpPpDp, "pp-when-state-does-not-fit"},
      {"qwen2.5-72b", "a100-80g-x8", 32, Shape::kTpDp, ""},
      {"qwen2.5-72b", "a100-80g-x8", 4, Shape::kTpPpDp, "pp-when-state-does-not-fit"},
      {"qwen3-30b-moe", "a100-80g-x8", 1, Shape::kDp, "moe-ep-instead-of-tp"},
      {"qwen3-30b-moe", "a100-80g-x8", 4, Shape::kPpDp, "moe-ep-instead-of-tp"},
      {"qwen3-235b-moe", "a100-80g-x8", 8, Shape::kTpPpDp, "", util},
      {"qwen3-235b-moe", "a100-80g-x8", 16, Shape::kTpPpDp, "", util},
      {"qwen3-235b-moe", "moe-8node", 8, Shape::kPpDp, "moe-ep-instead-of-tp", util},
  };
  const std::string doc = test::read_text(test::source_dir() / "docs/decision-tree.md");
  int agree = 0;
  for (const auto& tc : cases) {
    std::vector<std::string> sets = tc.extra;
    sets.push_back("nodes=" + std::to_string(tc.nodes));
    const Plan p = plan_with(tc.model, tc.cluster, sets);
    ASSERT_TRUE(plan_ok(p)) << tc.model << " on " << tc.nodes << " nodes";
    const Shape got = shape_of(p.best.layout);
    const Shape rule = rule_of_thumb(static_cast<double>(count_params(p.model).total()));
    EXPECT_EQ(name(got), std::string(name(tc.expected)))
        << tc.model << " on " << tc.nodes << " nodes";
    if (rule == tc.expected) {
      EXPECT_STREQ(tc.why, "") << tc.model << ": agrees with the rule, so no explanation is needed";
      ++agree;
    } else {
      EXPECT_NE(doc.find(std::string("{#") + tc.why + "}"), std::string::npos)
          << "docs/decision-tree.md must explain '" << tc.why << "' (" << tc.model << ")";
    }
    // Over 8 nodes: TP stays inside nodes and only DP / PP cross them (hierarchical).
    if (tc.nodes > 8) {
      EXPECT_TRUE(tp_groups_within_nodes(p.rank_map));
      EXPECT_NE(communication_pattern(p).find("hierarchical"), std::string::npos);
    }
  }
  EXPECT_GE(agree, 8);
}

}  // namespace
}  // namespace grpo::core
