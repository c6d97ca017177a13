// Rank map and env contract: coordinates by construction, and golden files for three profiles
// (docs/rank-map.md, docs/env-contract.md). GRPO_UPDATE_GOLDEN=1 regenerates the goldens.
#include <gtest/gtest.h>

#include <set>

#include "grpo/plan/env_contract.h"
#include "grpo/plan/plan_render.h"
#include "grpo/plan/rank_map.h"
#include "test_support.h"

namespace grpo::core {
namespace {

TEST(RankMap, CoordinatesFollowMegatronOrder) {
  // 2 nodes x 8, TP=2 PP=2 DP=4, EP=4 ETP=1 (EDP = 16 / (1*4*2) = 2).
  const RankMap map = build_rank_map(2, 8, ParallelDims{2, 2, 1, 4, 4, 1});
  ASSERT_EQ(map.world_size(), 16);
  const RankCoords& r = map.ranks[11];
  EXPECT_EQ(r.node_rank, 1);
  EXPECT_EQ(r.local_rank, 3);
  EXPECT_EQ(r.device, 3);
  EXPECT_EQ(r.tp, 1);  // 11 % 2
  EXPECT_EQ(r.dp, 1);  // (11 / 2) % 4
  EXPECT_EQ(r.pp, 1);  // 11 / 8
  EXPECT_EQ(r.etp, 0);
  EXPECT_EQ(r.ep, 3);   // 11 % 4
  EXPECT_EQ(r.edp, 0);  // (11 / 4) % 2
  EXPECT_TRUE(tp_groups_within_nodes(map));
  // Every (tp, cp, dp, pp) tuple appears exactly once.
  std::set<std::tuple<int, int, int, int>> seen;
  for (const auto& x : map.ranks) EXPECT_TRUE(seen.insert({x.tp, x.cp, x.dp, x.pp}).second);
}

TEST(RankMap, GroupMembersOfEachKind) {
  // The layout above. Dense view: g = tp + 2 * dp + 8 * pp; expert view: g = ep + 4 * edp + 8 * pp.
  // Rank 5: tp 1, dp 2, pp 0; ep 1, edp 1.
  const RankMap map = build_rank_map(2, 8, ParallelDims{2, 2, 1, 4, 4, 1});
  using V = std::vector<int>;
  EXPECT_EQ(group_members(map, 5, GroupKind::kTp), (V{4, 5}));
  EXPECT_EQ(group_members(map, 5, GroupKind::kCp), (V{5}));
  EXPECT_EQ(group_members(map, 5, GroupKind::kDp), (V{1, 3, 5, 7}));
  EXPECT_EQ(group_members(map, 5, GroupKind::kPp), (V{5, 13}));
  EXPECT_EQ(group_members(map, 5, GroupKind::kEtp), (V{5}));
  EXPECT_EQ(group_members(map, 5, GroupKind::kEp), (V{4, 5, 6, 7}));
  EXPECT_EQ(group_members(map, 5, GroupKind::kEdp), (V{1, 5}));
  EXPECT_EQ(group_members(map, 13, GroupKind::kEp), (V{12, 13, 14, 15}));
  // DP=2 EP=2 on 2 ranks (the local-cpu plan for tiny-moe): one EP group, EDP groups of one.
  const RankMap two = build_rank_map(1, 2, ParallelDims{1, 1, 1, 2, 2, 1});
  EXPECT_EQ(group_members(two, 1, GroupKind::kEp), (V{0, 1}));
  EXPECT_EQ(group_members(two, 1, GroupKind::kEdp), (V{1}));
  EXPECT_EQ(group_members(two, 1, GroupKind::kDp), (V{0, 1}));
}

TEST(RankMap, TpWiderThanANodeIsDetected) {
  EXPECT_FALSE(tp_groups_within_nodes(build_rank_map(2, 4, ParallelDims{8, 1, 1, 1, 1, 1})));
  EXPECT_TRUE(tp_groups_within_nodes(build_rank_map(2, 4, ParallelDims{4, 1, 1, 2, 1, 1})));
}

TEST(EnvContract, DerivedSettings) {
  const auto c = test::cluster("moe-8node");
  Layout tp1;
  EXPECT_EQ(build_env(c, tp1).job.count("CUDA_DEVICE_MAX_CONNECTIONS"), 0u);
  Layout tp2;
  tp2.dims.tp = 2;
  const auto env = build_env(c, tp2);
  EXPECT_EQ(env.job.at("CUDA_DEVICE_MAX_CONNECTIONS"), "1");
  EXPECT_EQ(env.job.at("NCCL_IB_HCA"), "mlx5_0,mlx5_1,mlx5_2,mlx5_3");
  EXPECT_EQ(env.job.at("NCCL_SOCKET_IFNAME"), "bond0");
  EXPECT_EQ(env.job.at("OMP_NUM_THREADS"), "24");
  const auto npu = build_env(test::cluster("npu-910b-x8"), tp2);
  EXPECT_EQ(npu.job.at("ASCEND_RT_VISIBLE_DEVICES"), "0,1,2,3,4,5,6,7");
  EXPECT_EQ(npu.job.at("HCCL_CONNECT_TIMEOUT"), "1200");
  EXPECT_EQ(npu.job.count("NCCL_IB_HCA"), 0u);
  const RankMap map = build_rank_map(8, 8, ParallelDims{2, 1, 1, 32, 1, 1});
  const EnvMap r = rank_env(env, map, 13);
  EXPECT_EQ(r.at("RANK"), "13");
  EXPECT_EQ(r.at("LOCAL_RANK"), "5");
  EXPECT_EQ(r.at("GROUP_RANK"), "1");
  EXPECT_EQ(r.at("WORLD_SIZE"), "64");
  EXPECT_EQ(r.at("LOCAL_WORLD_SIZE"), "8");
}

struct GoldenCase {
  const char* name;
  const char* cluster;
  ParallelDims dims;
};

TEST(Golden, RankMapAndEnvForThreeProfiles) {
  const std::vector<GoldenCase> cases = {
      {"a100x8", "a100x8", ParallelDims{2, 1, 1, 4, 8, 1}},
      {"a100-40g-x4", "a100-40g-x4", ParallelDims{2, 2, 1, 8, 1, 1}},
      {"npu-910b-x8", "npu-910b-x8", ParallelDims{4, 1, 1, 2, 1, 1}},
  };
  for (const auto& gc : cases) {
    const auto c = test::cluster(gc.cluster);
    Layout l;
    l.dims = gc.dims;
    const RankMap map = build_rank_map(c.nodes, c.gpus_per_node, gc.dims);
    test::expect_golden(std::string("rankmap-") + gc.name + ".json",
                        rank_map_to_json(map).dump(2) + "\n");
    test::expect_golden(std::string("env-") + gc.name + ".json",
                        env_to_json(build_env(c, l), map).dump(2) + "\n");
  }
}

TEST(Golden, ParallelConfigSummaryOfTheDesignCard) {
  PlanRequest req;
  req.cluster = test::cluster("a100x8");
  req.model = test::model("qwen3-30b-moe");
  test::expect_golden("plan-a100x8-qwen3-30b-moe.txt", render_summary(make_plan(req)));
}

}  // namespace
}  // namespace grpo::core
