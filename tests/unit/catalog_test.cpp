// Profiles and model specs: the shipped files load, counts match the published totals, and bad
// input gives one-line errors with file:line:col.
#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <fstream>

#include "grpo/core/catalog.h"
#include "grpo/core/model_spec.h"
#include "grpo/core/toml_reader.h"
#include "test_support.h"

namespace grpo::core {
namespace {

using test::shipped;

const char* kMinimalCluster = R"(name = "mini"
nodes = 2
gpus_per_node = 4
[device]
kind = "X"
vendor = "nvidia"
memory_gib = 40
peak_bf16_tflops = 100
peak_fp16_tflops = 100
memory_bandwidth_gbps = 1000
bf16 = true
[network]
intra_node = "nvlink"
intra_node_gbps = 100
inter_node = "infiniband"
inter_node_gbps = 50
)";

TEST(Catalog, EveryShippedClusterProfileLoads) {
  const auto names = shipped().names(CatalogKind::kCluster);
  for (const char* required : {"a100x8", "a100-40g-x4", "a100-80g-x8", "moe-8node", "h20-96g-x8",
                               "npu-910b-x8", "local-cpu"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  for (const auto& n : names) {
    auto c = load_cluster(shipped(), n);
    ASSERT_TRUE(c.ok()) << n << ": " << c.error().str();
    EXPECT_EQ(c->name, n);
    EXPECT_GT(c->world_size(), 0);
  }
}

TEST(Catalog, ProfilesMatchTheIssue) {
  auto a40 = test::cluster("a100-40g-x4");
  EXPECT_EQ(a40.nodes, 4);
  EXPECT_EQ(a40.gpus_per_node, 8);
  EXPECT_EQ(a40.device.memory_gib, 40);
  auto a80 = test::cluster("a100-80g-x8");
  EXPECT_EQ(a80.nodes, 8);
  EXPECT_EQ(a80.device.memory_gib, 80);
  auto moe = test::cluster("moe-8node");
  EXPECT_EQ(moe.nodes, 8);
  EXPECT_EQ(moe.network.ib_hcas.size(), 4u);
  auto npu = test::cluster("npu-910b-x8");
  EXPECT_EQ(npu.device.vendor, DeviceVendor::kAscend);
  EXPECT_EQ(npu.device.memory_gib, 64);
  EXPECT_TRUE(npu.env.count("HCCL_CONNECT_TIMEOUT"));
  auto h20 = test::cluster("h20-96g-x8");
  EXPECT_EQ(h20.device.memory_gib, 96);
  auto cpu = test::cluster("local-cpu");
  EXPECT_EQ(cpu.device.vendor, DeviceVendor::kCpu);
  EXPECT_EQ(cpu.nodes, 1);
}

TEST(Catalog, ExtendsMergesTablesAndChildWins) {
  auto a40 = test::cluster("a100-40g-x4");  // extends a100x8
  EXPECT_EQ(a40.device.kind, "A100-SXM4-40GB");
  EXPECT_EQ(a40.device.peak_bf16_tflops, 312);  // inherited
  EXPECT_EQ(a40.slurm.gres, "gpu:8");           // inherited table
  EXPECT_EQ(a40.network.ib_hcas.size(), 4u);    // arrays replaced whole
  auto h100 = test::cluster("h100-x8");         // extends moe-8node
  EXPECT_EQ(h100.network.intra_node_gbps, 450);
  EXPECT_EQ(h100.nodes, 8);
}

TEST(Catalog, EveryShippedModelMatchesItsPublishedTotalWithinOnePercent) {
  const auto names = shipped().names(CatalogKind::kModel);
  for (const char* required : {"qwen2.5-7b", "qwen2.5-vl-7b", "qwen3-8b", "qwen3-30b-moe",
                               "qwen3-235b-moe", "qwen3-vl-235b-moe", "tiny-dense", "tiny-moe"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  int checked = 0;
  for (const auto& n : names) {
    auto m = load_model(shipped(), n);
    ASSERT_TRUE(m.ok()) << n << ": " << m.error().str();
    if (m->published_params == 0) continue;
    const double total = static_cast<double>(count_params(*m).total());
    const double published = static_cast<double>(m->published_params);
    EXPECT_LT(std::fabs(total - published) / published, 0.01)
        << n << ": " << total << " vs " << published;
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Catalog, ParamCountsEqualTheRecordedExactTotals) {
  std::ifstream in(test::source_dir() / "tests/data/model_params/expected.txt");
  ASSERT_TRUE(in) << "tests/data/model_params/expected.txt";
  std::string name;
  std::int64_t expected = 0;
  int n = 0;
  while (in >> name) {
    if (name[0] == '#') {
      std::getline(in, name);
      continue;
    }
    in >> expected;
    EXPECT_EQ(count_params(test::model(name)).total(), expected) << name;
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(Catalog, MoeActiveParamsMatchPublishedActiveCounts) {
  // Qwen3-30B-A3B: 3.3B activated; Qwen3-235B-A22B: 22B activated (model cards).
  const auto m30 = test::model("qwen3-30b-moe");
  EXPECT_NEAR(static_cast<double>(count_params(m30).active(m30)) / 1e9, 3.3, 0.1);
  const auto m235 = test::model("qwen3-235b-moe");
  EXPECT_NEAR(static_cast<double>(count_params(m235).active(m235)) / 1e9, 22.0, 0.3);
}

// toml11 reads an integer beyond int64 as INT64_MAX/MIN without a word: refused with its place.
TEST(Catalog, IntegersBeyondInt64AreRefusedNotClamped) {
  auto big = parse_toml("a = 1\nnodes = 99_999_999_999_999_999_999\n", "c.toml");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().str(),
            "c.toml:2:9: integer 99_999_999_999_999_999_999 is out of range (-2^63 to 2^63 - 1)");
  for (const char* t : {"x = -9223372036854775809", "x = 0x1_0000_0000_0000_0000",
                        "[t]\ny = [1, 9223372036854775808]"}) {
    EXPECT_FALSE(parse_toml(t, "c.toml").ok()) << t;
  }
  // The limits themselves are integers.
  auto max = parse_toml(
      "x = 9223372036854775807\ny = -9_223_372_036_854_775_808\nz = "
      "0x7fffffffffffffff",
      "c.toml");
  ASSERT_TRUE(max.ok()) << max.error().str();
  EXPECT_EQ(toml::find(*max, "x").as_integer(), std::numeric_limits<std::int64_t>::max());
}

TEST(Catalog, MalformedTomlReportsFileLineColumn) {
  MemorySourceProvider p;
  p.add(CatalogKind::kCluster, "bad", "name = \"x\"\nnodes = \n");
  auto c = load_cluster(p, "bad");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kParse);
  EXPECT_EQ(c.error().where.file, "bad.toml");
  EXPECT_EQ(c.error().where.line, 2u);
  EXPECT_EQ(c.error().where.column, 9u);  // where the value should start
  EXPECT_EQ(c.error().str().find('\n'), std::string::npos);
  EXPECT_EQ(c.error().str(),
            "bad.toml:2:9: missing value after key-value separator '=' (expected value, but got "
            "nothing)");
}

TEST(Catalog, InvalidUtf8IsOneLineWithItsPlace) {
  // The input that crashed toml11 3.7.1 (heap read past a literal string's end) under
  // fuzz_model_loader: 0xD3 is a lead byte followed by '=' (not a continuation byte).
  MemorySourceProvider p;
  p.add(CatalogKind::kModel, "bad", "name = 'x'\nno='deNo\xD3='deN4to4\n");
  auto m = load_model(p, "bad");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kParse);
  EXPECT_EQ(m.error().str(), "bad.toml:2:9: invalid UTF-8 (byte 0xD3)");
}

TEST(Catalog, UnknownKeySuggestsTheClosestKnownOne) {
  MemorySourceProvider p;
  p.add(CatalogKind::kCluster, "typo", "gpus_per_nodes = 3\n" + std::string(kMinimalCluster));
  auto c = load_cluster(p, "typo");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kUnknownKey);
  EXPECT_NE(c.error().message.find("did you mean 'gpus_per_node'"), std::string::npos)
      << c.error().str();
  EXPECT_EQ(c.error().where.line, 1u);
  // A key inside a table is named with its table.
  p.add(CatalogKind::kCluster, "typo2", std::string(kMinimalCluster) + "intra_node_gpbs = 3\n");
  auto t = load_cluster(p, "typo2");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(
      t.error().str(),
      "typo2.toml:17:19: unknown key 'network.intra_node_gpbs' (did you mean 'intra_node_gbps'?)");
}

TEST(Catalog, WrongTypeNamesTheKeyAndLocation) {
  MemorySourceProvider p;
  std::string text = kMinimalCluster;
  text.replace(text.find("memory_gib = 40"), 15, "memory_gib = \"40\"");
  p.add(CatalogKind::kCluster, "t", text);
  auto c = load_cluster(p, "t");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kWrongType);
  EXPECT_EQ(c.error().str(), "t.toml:7:14: device.memory_gib: expected a number, got a string");
}

TEST(Catalog, ZeroAndNegativeSizesAreRejected) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"nodes = 2", "nodes = 0"},
           {"gpus_per_node = 4", "gpus_per_node = -1"},
           {"memory_gib = 40", "memory_gib = 0"},
           {"intra_node_gbps = 100", "intra_node_gbps = -5"}}) {
    MemorySourceProvider p;
    std::string text = kMinimalCluster;
    text.replace(text.find(from), from.size(), to);
    p.add(CatalogKind::kCluster, "z", text);
    auto c = load_cluster(p, "z");
    ASSERT_FALSE(c.ok()) << to;
    EXPECT_EQ(c.error().kind, ErrorKind::kInvalidValue) << c.error().str();
    EXPECT_TRUE(c.error().where.known()) << c.error().str();
  }
}

TEST(Catalog, UnknownProfileAndModelSuggestNames) {
  auto c = load_cluster(shipped(), "a100x9");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(c.error().message.find("did you mean 'a100x8'"), std::string::npos) << c.error().str();
  auto m = load_model(shipped(), "qwen3-30b-mo");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("qwen3-30b-moe"), std::string::npos);
}

TEST(Catalog, CyclicExtendsIsAnError) {
  MemorySourceProvider p;
  p.add(CatalogKind::kCluster, "a", "extends = \"b\"\n");
  p.add(CatalogKind::kCluster, "b", "extends = \"c\"\n");
  p.add(CatalogKind::kCluster, "c", "extends = \"a\"\n");
  auto c = load_cluster(p, "a");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kCycle);
  EXPECT_NE(c.error().message.find("a -> b -> c -> a"), std::string::npos) << c.error().str();
  p.add(CatalogKind::kCluster, "self", "extends = \"self\"\n");
  EXPECT_EQ(load_cluster(p, "self").error().kind, ErrorKind::kCycle);
}

TEST(Catalog, MissingParentPointsAtTheExtendsLine) {
  MemorySourceProvider p;
  p.add(CatalogKind::kCluster, "child", "name = \"c\"\nextends = \"nope\"\n");
  auto c = load_cluster(p, "child");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(c.error().where.line, 2u);
}

TEST(Catalog, SetOverridesAnyFieldWithTypedValues) {
  auto c = test::cluster("a100x8", {{"nodes", "4"},
                                    {"device.memory_gib", "40"},
                                    {"slurm.partition", "debug"},
                                    {"slurm.account", "\"proj x\""},
                                    {"grpo.rollout_n", "8"},
                                    {"env.NCCL_DEBUG", "INFO"},
                                    {"network.ib_hcas", "[\"mlx5_0\"]"}});
  EXPECT_EQ(c.nodes, 4);
  EXPECT_EQ(c.device.memory_gib, 40);
  EXPECT_EQ(c.slurm.partition, "debug");
  EXPECT_EQ(c.slurm.account, "proj x");
  EXPECT_EQ(c.grpo.rollout_n, 8);
  EXPECT_EQ(c.env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(c.network.ib_hcas, std::vector<std::string>{"mlx5_0"});
}

// grpo-launch's own variables (core::is_launcher_owned_env) cannot come from a profile's [env]
// (or --set env.X): they would change what the launcher does, not what the job sees.
TEST(Catalog, ProfileEnvCannotSetTheLaunchersVariables) {
  for (const char* name : {"GRPO_STANDBY", "GRPO_RUN_DIR", "GRPO_TP", "GRPO_FAULT", "GRPO_MTBF_S",
                           "GRPO_VERL_END_TIME"}) {
    auto c = load_cluster(shipped(), "a100x8", {{std::string("env.") + name, "1"}});
    ASSERT_FALSE(c.ok()) << name;
    EXPECT_EQ(c.error().kind, ErrorKind::kInvalidValue);
    EXPECT_NE(c.error().str().find(std::string("env.") + name + ": grpo-launch sets this"),
              std::string::npos)
        << c.error().str();
  }
  EXPECT_TRUE(load_cluster(shipped(), "a100x8", {{"env.GRPO_MY_FLAG", "1"}}).ok());
}

// `--set slurm.time=00:30:00` is what a user types; TOML reads it as a local time, not a string.
TEST(Catalog, ATimeLimitWithoutQuotesIsItsText) {
  EXPECT_EQ(test::cluster("a100x8", {{"slurm.time", "00:30:00"}}).slurm.time, "00:30:00");
  EXPECT_EQ(test::cluster("a100x8", {{"slurm.time", "\"2-00:00:00\""}}).slurm.time, "2-00:00:00");
}

TEST(Catalog, BadSetOverridesAreOneLineErrors) {
  auto bad_type = load_cluster(shipped(), "a100x8", {{"nodes", "many"}});
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.error().kind, ErrorKind::kWrongType);
  EXPECT_NE(bad_type.error().str().find("--set nodes=many"), std::string::npos)
      << bad_type.error().str();
  auto unknown = load_cluster(shipped(), "a100x8", {{"device.memroy_gib", "40"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::kUnknownKey);
  EXPECT_NE(unknown.error().message.find("memory_gib"), std::string::npos);
  EXPECT_FALSE(parse_override("nodes").ok());
  EXPECT_FALSE(parse_override("=3").ok());
  auto nested = load_cluster(shipped(), "a100x8", {{"nodes.x", "1"}});
  ASSERT_FALSE(nested.ok());
}

TEST(Catalog, ModelValidation) {
  MemorySourceProvider p;
  const std::string base =
      "name = \"m\"\nhidden_size = 64\nnum_layers = 2\nnum_attention_heads = 4\nnum_kv_heads = 3\n"
      "ffn_hidden_size = 128\nvocab_size = 100\n";
  p.add(CatalogKind::kModel, "m", base);
  auto m = load_model(p, "m");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("multiple of num_kv_heads"), std::string::npos);
  p.add(CatalogKind::kModel, "k", "name = \"k\"\nhidden_size = 64\n");
  EXPECT_EQ(load_model(p, "k").error().kind, ErrorKind::kMissingKey);
  p.add(
      CatalogKind::kModel, "e",
      "name = \"e\"\nhidden_size = 64\nnum_layers = 2\nnum_attention_heads = 4\nnum_kv_heads = 2\n"
      "ffn_hidden_size = 128\nvocab_size = 100\n[moe]\nnum_experts = 4\nexperts_per_token = 5\n"
      "moe_ffn_hidden_size = 32\n");
  EXPECT_EQ(load_model(p, "e").error().kind, ErrorKind::kInvalidValue);
}

TEST(Catalog, HugeOrDeeplyNestedDocumentsAreRefused) {
  MemorySourceProvider p;
  p.add(CatalogKind::kCluster, "deep",
        "x = " + std::string(200, '[') + std::string(200, ']') + "\n");
  auto c = load_cluster(p, "deep");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kParse);
  p.add(CatalogKind::kCluster, "big", std::string(2u << 20, '#'));
  EXPECT_EQ(load_cluster(p, "big").error().kind, ErrorKind::kParse);
}

}  // namespace
}  // namespace grpo::core
