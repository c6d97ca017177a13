// The sharding plan (grpo/trainer/sharding_plan.h) against a layout worked out by hand.
#include <gtest/gtest.h>

#include "grpo/trainer/sharding_plan.h"
#include "test_specs.h"

namespace grpo::trainer {
namespace {

using Shapes = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

// tiny-moe (test_specs.h: hidden 128, 4 heads of 32, 2 K/V heads, 8 experts of FFN 128, vocab 64)
// as grpo-trainer names a few of its parameters, in model order.
Shapes tiny_moe_params() {
  return {{"model.embed_tokens.weight", {64, 128}},
          {"model.layers.0.self_attn.q_proj.weight", {128, 128}},
          {"model.layers.0.self_attn.q_norm.weight", {32}},
          {"model.layers.0.input_layernorm.weight", {128}},
          {"model.layers.1.mlp.gate.weight", {8, 128}},
          {"model.layers.2.self_attn.o_proj.weight", {128, 128}},
          {"model.layers.3.mlp.experts.5.up_proj.weight", {128, 128}},
          {"model.layers.3.mlp.experts.2.down_proj.weight", {128, 128}},
          {"model.norm.weight", {128}},
          {"lm_head.weight", {64, 128}}};
}

// Eight ranks: TP 2 (innermost), EP 2, PP 2 with layers [0, 2) and [2, 4). Rank 0's pipeline
// member at stage 1 is rank 4; its EP group holds experts 0-3 on rank 4 and 4-7 on rank 6 (the
// rank map's EP members are a TP group apart). This is TP rank 1.
ShardLayout eight_ranks() {
  ShardLayout l;
  l.tp_rank = 1;
  l.tp_size = 2;
  l.stages = {{0, 2}, {2, 4}};
  l.stage_owner = {0, 4};
  l.stage_expert_owners = {{0, 2}, {4, 6}};
  return l;
}

TEST(ShardingPlan, PlacesEveryParameterByHand) {
  const ShardingPlan plan(testing::tiny_moe(), tiny_moe_params(), eight_ranks());
  ASSERT_EQ(plan.params().size(), 10u);
  EXPECT_EQ(plan.params()[0].name, "model.embed_tokens.weight");  // model order kept

  const Placement* embed = plan.find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->stage, 0);
  EXPECT_EQ(embed->owner, 0);
  // Vocabulary rows: 64 / 2 = 32 each; TP rank 1 holds rows 32..63.
  ASSERT_EQ(embed->slices.size(), 2u);
  EXPECT_EQ(embed->own->offset, 32);
  EXPECT_EQ(embed->own->length, 32);
  EXPECT_EQ(embed->own_shape(), (std::vector<std::int64_t>{32, 128}));

  // q_proj: 4 heads / 2 = 2 heads of 32 = 64 rows each.
  const Placement* q = plan.find("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q->slices[0].offset, 0);
  EXPECT_EQ(q->own->offset, 64);
  EXPECT_EQ(q->own->dim, 0);
  EXPECT_FALSE(q->sequence_partial);
  // o_proj of layer 2: stage 1, held for checkpoints by rank 4, split by input columns.
  const Placement* o = plan.find("model.layers.2.self_attn.o_proj.weight");
  EXPECT_EQ(o->stage, 1);
  EXPECT_EQ(o->owner, 4);
  EXPECT_EQ(o->own->dim, 1);

  // Whole on every TP rank: the norms (sequence-partial, except q_norm: it runs on this rank's
  // heads) and the router.
  EXPECT_FALSE(plan.find("model.layers.0.input_layernorm.weight")->sliced());
  EXPECT_TRUE(plan.find("model.layers.0.input_layernorm.weight")->sequence_partial);
  EXPECT_FALSE(plan.find("model.layers.0.self_attn.q_norm.weight")->sequence_partial);
  EXPECT_TRUE(plan.find("model.layers.1.mlp.gate.weight")->sequence_partial);
  EXPECT_EQ(plan.find("model.layers.1.mlp.gate.weight")->stage, 0);

  // Experts of layer 3 (stage 1): 8 experts / EP 2 = 4 per member; expert 5 is on member 1
  // (rank 6), expert 2 on member 0 (rank 4). Whole without expert TP; never sequence-partial.
  const Placement* e5 = plan.find("model.layers.3.mlp.experts.5.up_proj.weight");
  EXPECT_EQ(e5->expert, 5);
  EXPECT_EQ(e5->owner, 6);
  EXPECT_FALSE(e5->sliced());
  EXPECT_FALSE(e5->sequence_partial);
  EXPECT_EQ(plan.find("model.layers.3.mlp.experts.2.down_proj.weight")->owner, 4);

  // The final norm and the LM head train on the last stage.
  EXPECT_EQ(plan.stage_of("model.norm.weight"), 1);
  EXPECT_EQ(plan.find("lm_head.weight")->owner, 4);
  EXPECT_EQ(plan.find("no.such.weight"), nullptr);
}

TEST(ShardingPlan, ExpertTensorParallelSplitsTheExperts) {
  ShardLayout l = eight_ranks();
  l.expert_tp = true;
  const ShardingPlan plan(testing::tiny_moe(), tiny_moe_params(), l);
  // FFN 128 / 2 = 64: up by output rows, down by input columns.
  const Placement* up = plan.find("model.layers.3.mlp.experts.5.up_proj.weight");
  EXPECT_EQ(up->own->dim, 0);
  EXPECT_EQ(up->own->offset, 64);
  EXPECT_EQ(plan.find("model.layers.3.mlp.experts.2.down_proj.weight")->own->dim, 1);
}

TEST(ShardingPlan, OneRankHoldsEverythingWhole) {
  const ShardingPlan plan(testing::tiny_moe(), tiny_moe_params(), {});
  for (const Placement& p : plan.params()) {
    EXPECT_EQ(p.stage, 0) << p.name;
    EXPECT_EQ(p.owner, 0) << p.name;
    EXPECT_FALSE(p.sliced()) << p.name;
    EXPECT_EQ(p.own_shape(), p.shape) << p.name;
  }
}

TEST(ShardingPlan, OptimizerStatesArePlacedAsTheirParameters) {
  const ShardingPlan plan(testing::tiny_moe(), tiny_moe_params(), eight_ranks());
  const std::vector<Placement> states = plan.optimizer_states();
  ASSERT_EQ(states.size(), 20u);
  EXPECT_EQ(states[0].name, "exp_avg.model.embed_tokens.weight");
  EXPECT_EQ(states[10].name, "exp_avg_sq.model.embed_tokens.weight");
  EXPECT_EQ(states[16].name, "exp_avg_sq.model.layers.3.mlp.experts.5.up_proj.weight");
  EXPECT_EQ(states[16].owner, 6);
  EXPECT_EQ(states[11].own->offset, 64);
}

TEST(ShardingPlan, ExpertIndexReadsTheName) {
  EXPECT_EQ(expert_index("model.layers.3.mlp.experts.17.up_proj.weight"), 17);
  EXPECT_EQ(expert_index("exp_avg.model.layers.3.mlp.experts.0.gate_proj.weight"), 0);
  EXPECT_EQ(expert_index("model.layers.3.mlp.shared_expert.up_proj.weight"), -1);
  EXPECT_EQ(expert_index("model.layers.3.mlp.experts.x.up_proj.weight"), -1);
}

}  // namespace
}  // namespace grpo::trainer
