// The engine-version switch (--engines) and the rules that follow verl, Megatron-Core and vLLM
// per version (docs/parallelism.md). Every expectation is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "grpo/core/engine_versions.h"
#include "grpo/core/family_rules.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/planner.h"
#include "test_support.h"

namespace grpo::core {
namespace {

using test::layout;
using test::plan_with;

EngineVersions engines(const std::string& spec) {
  auto e = parse_engine_versions(spec);
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().str());
  return e.ok() ? e.value() : EngineVersions{};
}

// A copy of the first matching diagnostic (the vectors are often temporaries).
std::optional<Diagnostic> find(const std::vector<Diagnostic>& diags, DiagCode code,
                               const std::string& setting = "") {
  const auto it = std::find_if(diags.begin(), diags.end(), [&](const Diagnostic& d) {
    return d.code == code && (setting.empty() || d.setting == setting);
  });
  return it == diags.end() ? std::nullopt : std::optional<Diagnostic>(*it);
}

bool has(const std::vector<Diagnostic>& diags, DiagCode code, const std::string& setting = "") {
  return find(diags, code, setting).has_value();
}

std::vector<Diagnostic> legality(const ModelSpec& m, const std::string& cluster, const Layout& l,
                                 const EngineVersions& e = {}, std::vector<Override> sets = {}) {
  const auto c = test::cluster(cluster, std::move(sets));
  return check_legality(m, c, c.grpo, l, e);
}

std::vector<Diagnostic> rollout(const ModelSpec& m, const std::string& cluster, const Layout& l,
                                const EngineVersions& e = {}, std::vector<Override> sets = {}) {
  return check_rollout_legality(m, test::cluster(cluster, std::move(sets)), l, e);
}

Layout rollout_only(int rtp, int rdp = 1, int rpp = 1) {
  Layout l;
  l.rollout_tp = rtp;
  l.rollout_dp = rdp;
  l.rollout_pp = rpp;
  return l;
}

// --- the switch --------------------------------------------------------------------------------

TEST(EngineVersions, DefaultsAreWhatVerl07Pins) {
  // verl 0.7.0 docker/Dockerfile.stable.vllm: vllm==0.12.0, Megatron-LM core_v0.15.0.
  EXPECT_EQ(EngineVersions{}.str(), "verl=0.7,megatron=0.15,vllm=0.12");
  EXPECT_EQ(engines("verl=0.7,megatron=0.15,vllm=0.12"), EngineVersions{});
}

TEST(EngineVersions, ParsesFullAndPartialSpecs) {
  const EngineVersions e = engines("verl=0.8,megatron=0.16,vllm=0.10.2");
  EXPECT_EQ(e.verl, (EngineVersion{0, 8, 0}));
  EXPECT_EQ(e.megatron, (EngineVersion{0, 16, 0}));
  EXPECT_EQ(e.vllm, (EngineVersion{0, 10, 2}));
  EXPECT_EQ(e.str(), "verl=0.8,megatron=0.16,vllm=0.10.2");
  // Engines not named keep their defaults; the order does not matter.
  const EngineVersions m = engines("megatron=0.13");
  EXPECT_EQ(m.megatron, (EngineVersion{0, 13, 0}));
  EXPECT_EQ(m.verl, EngineVersions{}.verl);
  EXPECT_EQ(m.vllm, EngineVersions{}.vllm);
  EXPECT_EQ(engines("vllm=0.11,verl=0.6").str(), "verl=0.6,megatron=0.15,vllm=0.11");
  EXPECT_LT((EngineVersion{0, 10, 2}), (EngineVersion{0, 12, 0}));
  EXPECT_LT((EngineVersion{0, 9, 9}), (EngineVersion{0, 10, 0}));
}

TEST(EngineVersions, ErrorsAreOneLineAndNameTheBadPart) {
  struct Case {
    std::string spec;
    std::vector<std::string> says;
  };
  for (const Case& c : std::vector<Case>{
           {"megatron", {"'megatron'", "ENGINE=VERSION"}},
           {"verl=0.7,sglang=0.5", {"'sglang=0.5'", "unknown engine 'sglang'"}},
           {"megatron=0.x", {"'megatron=0.x'", "'0.x'"}},
           {"vllm=12", {"'vllm=12'", "MAJOR.MINOR"}},
           {"megatron=0.15.1.2", {"'megatron=0.15.1.2'"}},
           {"verl=0.7,verl=0.8", {"'verl=0.8'", "given twice"}},
           {"verl=0.7,", {"empty part"}},
           {"", {"empty part"}},
           {"vllm=-1.2", {"'vllm=-1.2'"}},
       }) {
    const auto r = parse_engine_versions(c.spec);
    ASSERT_FALSE(r.ok()) << c.spec;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidValue);
    EXPECT_EQ(r.error().str().find('\n'), std::string::npos);
    EXPECT_EQ(r.error().message.rfind("--engines: ", 0), 0u) << r.error().message;
    for (const auto& s : c.says) {
      EXPECT_NE(r.error().message.find(s), std::string::npos)
          << c.spec << ": " << r.error().message;
    }
  }
}

// --- Megatron-Core rules per version -----------------------------------------------------------

TEST(EngineRules, KvHeadsFollowTheMegatronVersion) {
  // Qwen2.5-7B: 28 heads, 4 KV heads. TP = 8 is a multiple of 4: illegal through core 0.15
  // (num_query_groups % tp), legal from 0.16 (tp % num_query_groups). 28 % 8 != 0 fails heads.
  const auto m = test::model("qwen2.5-7b");
  const Layout tp8 = layout(8, 1, 1);
  EXPECT_TRUE(has(legality(m, "a100x8", tp8), DiagCode::kKvHeadsNotDivisible));
  EXPECT_TRUE(
      has(legality(m, "a100x8", tp8, engines("megatron=0.15")), DiagCode::kKvHeadsNotDivisible));
  EXPECT_FALSE(
      has(legality(m, "a100x8", tp8, engines("megatron=0.16")), DiagCode::kKvHeadsNotDivisible));
  EXPECT_TRUE(
      has(legality(m, "a100x8", tp8, engines("megatron=0.16")), DiagCode::kHeadsNotDivisible));
  // TP = 6 (12-device nodes): 4 % 6 != 0 and 6 % 4 != 0, illegal in every version.
  const std::vector<Override> twelve = {{"gpus_per_node", "12"}};
  const Layout tp6 = layout(6, 1, 2);
  EXPECT_TRUE(has(legality(m, "a100x8", tp6, engines("megatron=0.16"), twelve),
                  DiagCode::kKvHeadsNotDivisible));
  // Qwen3-30B-A3B: 32 heads, 4 KV heads, TP = 8 (EP = 8): only the KV rule is at stake.
  const auto moe = test::model("qwen3-30b-moe");
  const Layout moe8 = layout(8, 1, 1, 8);
  EXPECT_TRUE(has(legality(moe, "a100x8", moe8), DiagCode::kKvHeadsNotDivisible));
  EXPECT_TRUE(legality(moe, "a100x8", moe8, engines("megatron=0.16")).empty());
}

TEST(EngineRules, MoeWithTpNeedsSequenceParallelInEveryVersion) {
  // Qwen3-30B-A3B, TP = 2, EP = 8 (ETP 1), DP = 4 on 8 devices, SP off. Core 0.14 refuses it in
  // ModelParallelConfig (EP > 1 and TP > 1); from 0.15 that check only warns, but MoELayer.forward
  // raises ValueError in training whenever TP > 1 without SP (core 0.12 through 0.19 and main).
  const auto m = test::model("qwen3-30b-moe");
  Layout l = layout(2, 1, 4, 8);
  l.sequence_parallel = false;
  const auto v15 = legality(m, "a100x8", l);
  std::optional<Diagnostic> d = find(v15, DiagCode::kInvalidSetting, "sequence_parallel");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_NE(d->message.find("MoELayer.forward"), std::string::npos) << d->message;
  const auto v14 = legality(m, "a100x8", l, engines("megatron=0.14"));
  d = find(v14, DiagCode::kInvalidSetting, "sequence_parallel");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("ModelParallelConfig"), std::string::npos) << d->message;
  // EP = 1: no config check in any version, the forward check still fires.
  Layout ep1 = layout(2, 1, 4, 1);
  ep1.sequence_parallel = false;
  d = find(legality(m, "a100x8", ep1, engines("megatron=0.14")), DiagCode::kInvalidSetting,
           "sequence_parallel");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("MoELayer.forward"), std::string::npos);
  // SP on, or TP = 1: nothing.
  l.sequence_parallel = true;
  EXPECT_TRUE(legality(m, "a100x8", l).empty());
  Layout tp1 = layout(1, 1, 8, 8);
  EXPECT_TRUE(legality(m, "a100x8", tp1).empty());
}

TEST(EngineRules, ReferenceSizesThatDifferAreAWarning) {
  // verl initializes one parallel state from the actor's sizes; the reference runs in it.
  const auto m = test::model("qwen2.5-7b");
  Layout l = layout(2, 1, 4);
  l.ref_tp = 4;
  l.ref_pp = 2;
  const auto d = legality(m, "a100x8", l);
  ASSERT_TRUE(has(d, DiagCode::kTpMismatch, "ref_tp"));
  ASSERT_TRUE(has(d, DiagCode::kTpMismatch, "ref_pp"));
  EXPECT_EQ(find(d, DiagCode::kTpMismatch, "ref_tp")->severity, Severity::kWarning);
  EXPECT_EQ(find(d, DiagCode::kTpMismatch, "ref_pp")->severity, Severity::kWarning);
  EXPECT_FALSE(has_errors(d));
  // Through the planner: the plan stands and carries the warning.
  const Plan p = plan_with("qwen2.5-7b", "a100x8", {"tp=2", "ref_tp=4"});
  EXPECT_TRUE(plan_ok(p));
  EXPECT_TRUE(has(p.diagnostics, DiagCode::kTpMismatch));
}

TEST(EngineRules, DenseFfnAndVocabularyDivideByTp) {
  // Qwen3-8B (32 heads, 8 KV heads) with a made-up FFN of 12292 = 4 x 3073: TP 4 splits it,
  // TP 8 does not (Megatron's TE linears divide fc1/fc2 by TP).
  ModelSpec m = test::model("qwen3-8b");
  m.ffn_hidden_size = 12292;
  EXPECT_FALSE(has(legality(m, "a100x8", layout(4, 1, 2)), DiagCode::kInvalidSetting, "tp"));
  std::optional<Diagnostic> d =
      find(legality(m, "a100x8", layout(8, 1, 1)), DiagCode::kInvalidSetting, "tp");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("FFN size 12292"), std::string::npos) << d->message;
  // vLLM splits the same MLP over rollout TP: 8 fails, 4 passes.
  EXPECT_TRUE(has(rollout(m, "a100x8", rollout_only(8)), DiagCode::kInvalidSetting, "rollout_tp"));
  EXPECT_TRUE(rollout(m, "a100x8", rollout_only(4)).empty());
  // A vocabulary of 151940 = 4 x 37985: Megatron (no padding in verl's mbridge) fails at TP 8;
  // vLLM pads it to 152000 = 64 x 2375, which TP 8 divides.
  ModelSpec v = test::model("qwen3-8b");
  v.vocab_size = 151940;
  d = find(legality(v, "a100x8", layout(8, 1, 1)), DiagCode::kInvalidSetting, "tp");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("vocabulary 151940"), std::string::npos) << d->message;
  EXPECT_TRUE(rollout(v, "a100x8", rollout_only(8)).empty());
  // The padded vocabulary against rollout TP 3: 151936 (already a multiple of 64) % 3 = 1. A
  // spec with 48 heads, 12 KV heads and FFN 12288 passes every other rollout rule at TP 3.
  ModelSpec three = test::model("qwen3-8b");
  three.num_attention_heads = 48;
  three.num_kv_heads = 12;
  const auto r3 = rollout(three, "a100x8", rollout_only(3), {}, {{"gpus_per_node", "6"}});
  ASSERT_EQ(r3.size(), 1u);
  EXPECT_NE(r3.front().message.find("vocabulary 151936 (padded to 151936)"), std::string::npos)
      << r3.front().message;
  // FSDP layouts have no Megatron TP: the Megatron FFN/vocabulary rules do not apply.
  Layout fsdp = layout(1, 1, 8);
  fsdp.backend = Backend::kFsdp;
  EXPECT_TRUE(legality(m, "a100x8", fsdp).empty());
}

TEST(EngineRules, ExpertFfnDividesByRolloutTpUnlessExpertParallel) {
  // Qwen3-30B-A3B with a made-up expert FFN of 772 = 4 x 193: vLLM's fused MoE splits each
  // expert over rollout TP 8 (772 % 8 = 4) unless rollout.expert_parallel_size > 1.
  ModelSpec m = test::model("qwen3-30b-moe");
  m.moe_ffn_hidden_size = 772;
  const auto d = rollout(m, "a100x8", rollout_only(8));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d.front().message.find("expert FFN size 772"), std::string::npos);
  EXPECT_TRUE(rollout(m, "a100x8", rollout_only(4)).empty());
  Layout ep = rollout_only(8);
  ep.rollout_ep = 8;
  EXPECT_TRUE(rollout(m, "a100x8", ep).empty());
  // The shipped sizes (768) divide by 8.
  EXPECT_TRUE(rollout(test::model("qwen3-30b-moe"), "a100x8", rollout_only(8)).empty());
}

TEST(EngineRules, VisionHeadsDivideByRolloutTpUnlessDataMode) {
  // Qwen3-VL-235B-A22B: 64 heads, 4 KV heads, expert FFN 1536, vision tower 16 heads. Rollout
  // TP 32 (4 nodes) passes every text rule; 16 % 32 != 0 fails the vision tower.
  const auto m = test::model("qwen3-vl-235b-moe");
  ASSERT_EQ(m.vision.num_heads, 16);
  const auto d = rollout(m, "moe-8node", rollout_only(32));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.front().code, DiagCode::kHeadsNotDivisible);
  EXPECT_NE(d.front().message.find("vision tower's 16"), std::string::npos);
  EXPECT_NE(d.front().hint.find("mm_encoder_tp_mode=data"), std::string::npos);
  EXPECT_TRUE(rollout(m, "moe-8node", rollout_only(16)).empty());
  // mm_encoder_tp_mode=data replicates the tower (vLLM >= 0.10.2; not in 0.10.1).
  Layout data = rollout_only(32);
  data.vision_data_parallel = true;
  EXPECT_TRUE(rollout(m, "moe-8node", data).empty());
  EXPECT_TRUE(rollout(m, "moe-8node", data, engines("vllm=0.10.2")).empty());
  EXPECT_FALSE(rollout(m, "moe-8node", data, engines("vllm=0.10.1")).empty());
}

// --- rollout replicas --------------------------------------------------------------------------

TEST(EngineRules, RolloutTpMaySpanWholeNodes) {
  // Qwen2.5-72B (64 heads, 8 KV heads, FFN 29568 = 32 x 924, vocabulary 152064 = 32 x 4752) on
  // 8 nodes x 8: rollout TP 16 and 32 are replicas of 2 and 4 whole nodes.
  const auto m = test::model("qwen2.5-72b");
  EXPECT_TRUE(rollout(m, "a100-80g-x8", rollout_only(16)).empty());
  EXPECT_TRUE(rollout(m, "a100-80g-x8", rollout_only(32)).empty());
  // 12 does not divide 64 devices: only the world rule (the others are skipped).
  const auto twelve = rollout(m, "a100-80g-x8", rollout_only(12));
  ASSERT_EQ(twelve.size(), 1u);
  EXPECT_EQ(twelve.front().code, DiagCode::kWorldSizeMismatch);
  // On 6 nodes (48 devices) 12 divides the world but is 1.5 nodes.
  EXPECT_TRUE(has(rollout(m, "a100-80g-x8", rollout_only(12), {}, {{"nodes", "6"}}),
                  DiagCode::kTpCrossesNode));
}

TEST(EngineRules, RolloutReplicaIsTpTimesDpTimesPp) {
  // Qwen2.5-7B on 3 nodes x 8 (24 devices): a replica of TP 2 x DP 3 = 6 devices divides the
  // world but not a node; TP 4 x DP 3 = 12 is 1.5 nodes; TP 4 x DP 2 = 8 is one node.
  const auto m = test::model("qwen2.5-7b");
  const std::vector<Override> three = {{"nodes", "3"}};
  EXPECT_TRUE(
      has(rollout(m, "a100-80g-x8", rollout_only(2, 3), {}, three), DiagCode::kTpCrossesNode));
  EXPECT_TRUE(
      has(rollout(m, "a100-80g-x8", rollout_only(4, 3), {}, three), DiagCode::kTpCrossesNode));
  EXPECT_TRUE(rollout(m, "a100-80g-x8", rollout_only(4, 2), {}, three).empty());
  // On one node of 8: TP 2 x DP 3 = 6 does not divide 8 devices (verl's _build_rollout asserts).
  const auto d = rollout(m, "a100x8", rollout_only(2, 3));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.front().code, DiagCode::kWorldSizeMismatch);
  EXPECT_NE(d.front().message.find("TP x DP x PP = 2 x 3 x 1 = 6"), std::string::npos);
  EXPECT_TRUE(has(rollout(m, "a100x8", rollout_only(2, 1, 3)), DiagCode::kWorldSizeMismatch));
}

TEST(EngineRules, PlannerChoosesARolloutTpOverWholeNodes) {
  // Qwen3-235B-A22B on 8 nodes x A100-80GB: at rollout TP 8 the weights (~55 GiB per device)
  // exceed 0.6 x 80 GiB; at 16 (two whole nodes) they are half of that and fit.
  const Plan p = plan_with("qwen3-235b-moe", "a100-80g-x8", {});
  EXPECT_EQ(p.best.layout.rollout_tp, 16);
  EXPECT_FALSE(std::any_of(p.diagnostics.begin(), p.diagnostics.end(), [](const Diagnostic& d) {
    return d.code == DiagCode::kOomRisk && d.setting == "gpu_memory_utilization";
  }));
  // One node offers no multi-node TP: a100x8 still chooses among 1, 2, 4, 8.
  const Plan one = plan_with("qwen2.5-7b", "a100x8", {});
  EXPECT_LE(one.best.layout.rollout_tp, 8);
}

// --- batches -----------------------------------------------------------------------------------

TEST(EngineRules, SplitGroupsAreLegal) {
  // 100 prompts x 8 responses over DP 8: 800 responses split evenly (100 per rank) though the
  // 100 prompts do not. verl computes the GRPO advantages on the driver, grouped by uid.
  const auto d = legality(test::model("qwen2.5-7b"), "a100x8", layout(1, 1, 8), {},
                          {{"grpo.train_batch_size", "100"},
                           {"grpo.ppo_mini_batch_size", "100"},
                           {"grpo.rollout_n", "8"}});
  EXPECT_TRUE(d.empty()) << d.front().str();
}

// --- virtual pipeline and the pipeline layout --------------------------------------------------

TEST(EngineRules, VirtualPipelineStagesSplitTheLayers) {
  // Qwen2.5-7B: 28 layers over PP 2 = 14 per stage. VPP 2 gives 7 per virtual stage; VPP 4 does
  // not divide 14. VPP at PP 1 is refused by initialize_model_parallel.
  const auto m = test::model("qwen2.5-7b");
  Layout l = layout(1, 2, 4);
  l.vpp = 2;
  EXPECT_TRUE(legality(m, "a100x8", l).empty());
  l.vpp = 4;
  EXPECT_TRUE(has(legality(m, "a100x8", l), DiagCode::kLayersNotDivisible, "vpp"));
  Layout flat = layout(1, 1, 8);
  flat.vpp = 2;
  EXPECT_TRUE(has(legality(m, "a100x8", flat), DiagCode::kInvalidSetting, "vpp"));
  // Uneven stages (Qwen3-235B, 94 layers, PP 4): 23/24/24/23 under VPP 2 fails on both ends;
  // 22/24/24/24 (last not given: (94 - 22) / 3 = 24) passes.
  const auto big = test::model("qwen3-235b-moe");
  Layout u = layout(4, 4, 4, 8);
  u.vpp = 2;
  u.first_stage_layers = 23;
  u.last_stage_layers = 23;
  std::optional<Diagnostic> d =
      find(legality(big, "moe-8node", u), DiagCode::kLayersNotDivisible, "vpp");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("first stage 23, last stage 23"), std::string::npos) << d->message;
  u.first_stage_layers = 22;
  u.last_stage_layers = 0;
  EXPECT_FALSE(has(legality(big, "moe-8node", u), DiagCode::kLayersNotDivisible));
  // Embedding and loss counted as layers: (94 + 2) / 8 = 12 per rank; VPP 3 divides, VPP 5 not.
  Layout a = layout(4, 8, 2, 8);
  a.split_counts_embedding = a.split_counts_loss = true;
  a.vpp = 3;
  EXPECT_FALSE(has(legality(big, "moe-8node", a), DiagCode::kLayersNotDivisible));
  a.vpp = 5;
  EXPECT_TRUE(has(legality(big, "moe-8node", a), DiagCode::kLayersNotDivisible, "vpp"));
}

TEST(EngineRules, InterleavedScheduleNeedsWholeGroupsOfMicroBatches) {
  // 48 prompts x 1 response per mini batch over DP 4 = 12 responses per rank. PP 2, VPP 2:
  // micro batch 4 gives 3 micro batches (3 % 2 != 0), 2 gives 6, 12 gives 1 (< PP).
  const auto m = test::model("qwen2.5-7b");
  const std::vector<Override> sets = {
      {"grpo.train_batch_size", "96"}, {"grpo.ppo_mini_batch_size", "48"}, {"grpo.rollout_n", "1"}};
  for (const auto& [micro, bad] :
       std::vector<std::pair<int, bool>>{{4, true}, {2, false}, {12, true}, {3, false}}) {
    Layout l = layout(1, 2, 4, 1, 1, micro);
    l.vpp = 2;
    EXPECT_EQ(has(legality(m, "a100x8", l, {}, sets), DiagCode::kBatchNotDivisible, "micro_batch"),
              bad)
        << "micro batch " << micro;
    l.vpp = 0;  // without VPP the 1F1B schedule takes any count
    EXPECT_TRUE(legality(m, "a100x8", l, {}, sets).empty()) << "micro batch " << micro;
  }
}

TEST(EngineRules, PipelineLayoutParsesAsMegatronDoes) {
  // Megatron's docstring example: "Ettt|(tt|)*29,m|L" = Ettt, 29 x tt, m, L: 32 stages, 61 t.
  const PipelineLayout a = parse_pipeline_layout("Ettt|(tt|)*29,m|L");
  EXPECT_TRUE(a.error.empty()) << a.error;
  ASSERT_EQ(a.stages.size(), 32u);
  EXPECT_EQ(a.stages[0], "Ettt");
  EXPECT_EQ(a.stages[1], "tt");
  EXPECT_EQ(a.stages[30], "m");
  EXPECT_EQ(a.stages[31], "L");
  EXPECT_EQ(a.count('t'), 61);
  // Megatron's CI layout "Et*3|(tt|)*6tmL": Ettt, 6 x tt, tmL: 8 stages, 16 t.
  const PipelineLayout b = parse_pipeline_layout("Et*3|(tt|)*6tmL");
  ASSERT_EQ(b.stages.size(), 8u);
  EXPECT_EQ(b.stages[7], "tmL");
  EXPECT_EQ(b.count('t'), 16);
  EXPECT_NE(parse_pipeline_layout("E|tx|L").error.find("'x'"), std::string::npos);
  EXPECT_FALSE(parse_pipeline_layout("E(t)*99999999L").error.empty());
}

TEST(EngineRules, PipelineLayoutRules) {
  // Qwen2.5-7B (28 layers) at PP 2: "Et*7|t*7|t*7|t*7L" is 4 stages, VPP 2, 28 t.
  const auto m = test::model("qwen2.5-7b");
  Layout l = layout(1, 2, 4);
  l.pipeline_layout = "Et*7|t*7|t*7|t*7L";
  l.vpp = 2;
  EXPECT_TRUE(legality(m, "a100x8", l).empty());
  EXPECT_EQ(stage_layers(m, l), (std::vector<int>{14, 14}));
  // VPP left unset: verl would initialize the parallel state without it.
  l.vpp = 0;
  EXPECT_TRUE(has(legality(m, "a100x8", l), DiagCode::kInvalidSetting, "vpp"));
  l.vpp = 4;  // conflicts with the layout's 2 (Megatron asserts)
  EXPECT_TRUE(has(legality(m, "a100x8", l), DiagCode::kInvalidSetting, "vpp"));
  l.vpp = 2;
  l.pipeline_layout = "Et*7|t*7|t*7L";  // 3 stages over PP 2
  EXPECT_TRUE(has(legality(m, "a100x8", l), DiagCode::kLayersNotDivisible, "pipeline_layout"));
  l.pipeline_layout = "Et*6|t*7|t*7|t*7L";  // 27 decoder layers
  EXPECT_TRUE(has(legality(m, "a100x8", l), DiagCode::kLayersNotDivisible, "pipeline_layout"));
  l.pipeline_layout = "t*7|Et*7|t*7|t*7L";  // the embedding is not first
  EXPECT_TRUE(has(legality(m, "a100x8", l), DiagCode::kInvalidSetting, "pipeline_layout"));
  l.pipeline_layout = "Et*7|t*7|t*7|t*7L";
  l.first_stage_layers = 14;  // cannot be combined with the layout
  EXPECT_TRUE(has(legality(m, "a100x8", l), DiagCode::kInvalidSetting, "pipeline_layout"));
  l.first_stage_layers = 0;
  const auto d = find(legality(m, "a100x8", l, engines("megatron=0.12")), DiagCode::kInvalidSetting,
                      "pipeline_layout");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("0.13"), std::string::npos);
  // Per-rank layers: stages 0 and 2 on rank 0 (6 + 7), stages 1 and 3 on rank 1 (8 + 7).
  l.pipeline_layout = "Et*6|t*8|t*7|t*7L";
  EXPECT_EQ(stage_layers(m, l), (std::vector<int>{13, 15}));
}

TEST(EngineRules, ContextParallelNeedsPackedInput) {
  // verl's padded (bshd) path asserts cp_size == 1; the packed path is the default.
  const auto m = test::model("qwen2.5-7b");
  Layout l = layout(2, 1, 2);
  l.dims.cp = 2;
  EXPECT_TRUE(legality(m, "a100x8", l).empty());
  EXPECT_TRUE(has(legality(m, "a100x8", l, {}, {{"grpo.remove_padding", "false"}}),
                  DiagCode::kInvalidSetting, "remove_padding"));
  // An FSDP layout's CP is the Ulysses size; the rule is Megatron's.
  Layout fsdp = layout(1, 1, 4);
  fsdp.dims.cp = 2;
  fsdp.backend = Backend::kFsdp;
  EXPECT_FALSE(has(legality(m, "a100x8", fsdp, {}, {{"grpo.remove_padding", "false"}}),
                   DiagCode::kInvalidSetting, "remove_padding"));
}

}  // namespace
}  // namespace grpo::core

namespace grpo::core {
namespace {

// --- model families (family_rules.h; docs/parallelism.md "Model families") ---------------------

ModelSpec family(const std::string& architecture, const std::string& model_type) {
  ModelSpec m = test::model("qwen2.5-7b");
  m.architecture = architecture;
  m.model_type = model_type;
  return m;
}

// verl b178a3cd registry.py SupportedModel and mbridge 10cb17f's @register_model names, by hand.
TEST(FamilyRules, VerlsMegatronWorkerBuildsTheFamiliesItsRegistryAndMbridgeName) {
  EXPECT_TRUE(verl_megatron_supports(family("", ""), true, true).ok);  // a TOML (Qwen) spec
  EXPECT_TRUE(verl_megatron_supports(family("LlamaForCausalLM", "llama"), true, true).ok);
  EXPECT_TRUE(verl_megatron_supports(family("MixtralForCausalLM", "mixtral"), true, true).ok);
  EXPECT_TRUE(
      verl_megatron_supports(family("DeepseekV3ForCausalLM", "deepseek_v3"), true, true).ok);
  EXPECT_TRUE(verl_megatron_supports(family("Glm4MoeForCausalLM", "glm4_moe"), true, true).ok);
  // Not in verl's registry: no Megatron forward, whatever the bridge.
  for (const char* arch : {"MistralForCausalLM", "DeepseekV2ForCausalLM", "Gemma2ForCausalLM",
                           "Phi3ForCausalLM", "OlmoeForCausalLM"}) {
    const FamilySupport s = verl_megatron_supports(family(arch, "x"), false, false);
    EXPECT_FALSE(s.ok) << arch;
    EXPECT_NE(s.why.find("not supported"), std::string::npos) << s.why;
    EXPECT_NE(s.fix.find("strategy=fsdp"), std::string::npos) << s.fix;
  }
  // In the registry, but mbridge has no bridge for the model_type: only the vanilla bridge fails.
  const FamilySupport oss =
      verl_megatron_supports(family("GptOssForCausalLM", "gpt_oss"), true, true);
  EXPECT_FALSE(oss.ok);
  EXPECT_NE(oss.why.find("Unregistered model type"), std::string::npos) << oss.why;
  EXPECT_TRUE(verl_megatron_supports(family("GptOssForCausalLM", "gpt_oss"), true, false).ok);
  EXPECT_TRUE(verl_megatron_supports(family("GptOssForCausalLM", "gpt_oss"), false, true).ok);
  // Kimi-K2: DeepseekV3ForCausalLM with model_type kimi_k2; the fix names deepseek_v3.
  const FamilySupport kimi =
      verl_megatron_supports(family("DeepseekV3ForCausalLM", "kimi_k2"), true, true);
  EXPECT_FALSE(kimi.ok);
  EXPECT_NE(kimi.fix.find("\"model_type\": \"deepseek_v3\""), std::string::npos) << kimi.fix;
}

// mbridge 10cb17f builds no sliding window but in its Gemma3 layers (a grep for "window" under
// mbridge/models finds only gemma3 and the Qwen2.5-VL vision tower): a window shorter than the
// sequence is a warning only then, and only with the vanilla bridge.
TEST(FamilyRules, MbridgeAttendsFullyOverASlidingWindow) {
  ModelSpec mixtral = family("MixtralForCausalLM", "mixtral");
  mixtral.sliding_window = 4096;
  mixtral.sliding_window_layers = mixtral.num_layers;
  const std::string why = mbridge_window_ignored(mixtral, true, true, 8192);
  EXPECT_NE(why.find("window of 4096 tokens"), std::string::npos) << why;
  EXPECT_NE(why.find("8192-token"), std::string::npos) << why;
  EXPECT_EQ(mbridge_window_ignored(mixtral, true, true, 4096), "");   // the window holds it
  EXPECT_EQ(mbridge_window_ignored(mixtral, false, true, 8192), "");  // no mbridge
  EXPECT_EQ(mbridge_window_ignored(mixtral, true, false, 8192), "");  // Megatron-Bridge
  ModelSpec gemma = family("Gemma3ForCausalLM", "gemma3");
  gemma.sliding_window = 1024;
  gemma.sliding_window_layers = 5;
  EXPECT_EQ(mbridge_window_ignored(gemma, true, true, 8192), "");
  EXPECT_EQ(mbridge_window_ignored(family("LlamaForCausalLM", "llama"), true, true, 8192), "");
}

// vllm/config/model.py _FLOAT16_NOT_SUPPORTED_MODELS, by hand.
TEST(FamilyRules, VllmRefusesFloat16ForGemmaAndGlm4) {
  for (const char* type : {"gemma2", "gemma3", "gemma3_text", "glm4"}) {
    EXPECT_NE(vllm_float16_refusal(family("X", type)).find("Numerical instability"),
              std::string::npos)
        << type;
  }
  for (const char* type : {"", "llama", "glm4_moe", "qwen3"}) {
    EXPECT_EQ(vllm_float16_refusal(family("X", type)), "") << type;
  }
}

// The planner plans such a family for FSDP when the backend is free, and refuses a fixed
// Megatron layout in one finding that says why.
TEST(FamilyRules, ThePlannerTurnsToFsdpOrSaysWhyNot) {
  PlanRequest req;
  req.model = family("MistralForCausalLM", "mistral");
  req.cluster = test::cluster("a100x8");
  const Plan free = make_plan(req);
  ASSERT_TRUE(plan_ok(free));
  EXPECT_TRUE(free.best.layout.backend == Backend::kFsdp);
  const auto note = find(free.diagnostics, DiagCode::kInvalidSetting, "backend");
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->severity, Severity::kInfo);
  req.constraints.tp = 2;
  const Plan fixed = make_plan(req);
  EXPECT_FALSE(plan_ok(fixed));
  const auto why = find(fixed.diagnostics, DiagCode::kInvalidSetting, "backend");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->severity, Severity::kError);
  EXPECT_NE(why->message.find("MistralForCausalLM"), std::string::npos);
}

}  // namespace
}  // namespace grpo::core
