#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_env.h"
#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap {
namespace {

using core::ErrorKind;
using testing::reader;
using testing::valid_vars;
using testing::Vars;

TEST(WorldFromEnv, ParsesAValidEnvironment) {
  auto world = world_from_env(reader(valid_vars()), "n2");
  ASSERT_TRUE(world.ok()) << world.error().str();
  EXPECT_EQ(world->source, Source::kEnv);
  EXPECT_EQ(world->global_rank, 5);
  EXPECT_EQ(world->world_size, 8);
  EXPECT_EQ(world->local_rank, 1);
  EXPECT_EQ(world->local_world_size, 4);
  EXPECT_EQ(world->node_rank, 1);  // derived: RANK / LOCAL_WORLD_SIZE
  EXPECT_EQ(world->hostname, "n2");
  ASSERT_TRUE(world->fixed_rendezvous.has_value());
  EXPECT_EQ(*world->fixed_rendezvous, (Endpoint{"n1.example", 29500}));
  EXPECT_TRUE(world->pmix_fallback_reason.empty());
}

TEST(WorldFromEnv, SingleProcessWorld) {
  Vars vars = {{"RANK", "0"},
               {"WORLD_SIZE", "1"},
               {"LOCAL_RANK", "0"},
               {"LOCAL_WORLD_SIZE", "1"},
               {"MASTER_ADDR", "127.0.0.1"},
               {"MASTER_PORT", "1"}};
  auto world = world_from_env(reader(vars), "h");
  ASSERT_TRUE(world.ok()) << world.error().str();
  EXPECT_EQ(world->node_rank, 0);
  EXPECT_EQ(world->fixed_rendezvous->port, 1);
}

TEST(WorldFromEnv, AcceptsLeadingZerosAndTheLargestPort) {
  Vars vars = valid_vars();
  vars["RANK"] = "007";
  vars["MASTER_PORT"] = "65535";
  auto world = world_from_env(reader(vars), "h");
  ASSERT_TRUE(world.ok()) << world.error().str();
  EXPECT_EQ(world->global_rank, 7);
  EXPECT_EQ(world->fixed_rendezvous->port, 65535);
}

TEST(WorldFromEnv, GroupRankOverridesTheDerivedNodeRank) {
  // A cyclic placement: rank 5 on node 0 is legitimate when the launcher says so.
  Vars vars = valid_vars();
  vars["GROUP_RANK"] = "0";
  auto world = world_from_env(reader(vars), "h");
  ASSERT_TRUE(world.ok()) << world.error().str();
  EXPECT_EQ(world->node_rank, 0);
}

TEST(WorldFromEnv, NodeRankIsAnAliasOfGroupRank) {
  Vars vars = valid_vars();
  vars["NODE_RANK"] = "1";
  auto world = world_from_env(reader(vars), "h");
  ASSERT_TRUE(world.ok()) << world.error().str();
  EXPECT_EQ(world->node_rank, 1);
  vars["GROUP_RANK"] = "1";
  world = world_from_env(reader(vars), "h");
  ASSERT_TRUE(world.ok()) << world.error().str();
  EXPECT_EQ(world->node_rank, 1);
}

TEST(WorldFromEnv, IgnoresPmixVariables) {
  Vars vars = valid_vars();
  vars["PMIX_NAMESPACE"] = "slurm.pmix.1.0";
  EXPECT_TRUE(world_from_env(reader(vars), "h").ok());
}

struct BadCase {
  std::string name;                // test label
  Vars overrides;                  // values to set on top of valid_vars()
  std::vector<std::string> unset;  // variables to remove
  ErrorKind kind;
  std::string message;  // exact expected message
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

class WorldFromEnvRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(WorldFromEnvRejects, WithAOneLineErrorNamingTheVariable) {
  const BadCase& c = GetParam();
  Vars vars = valid_vars();
  for (const auto& [k, v] : c.overrides) vars[k] = v;
  for (const auto& k : c.unset) vars.erase(k);
  auto world = world_from_env(reader(vars), "h");
  ASSERT_FALSE(world.ok()) << c.name;
  EXPECT_EQ(world.error().kind, c.kind) << world.error().str();
  EXPECT_EQ(world.error().str(), c.message);
  EXPECT_EQ(world.error().str().find('\n'), std::string::npos);
}

const char* const kNeeds =
    " is not set (env bootstrap needs RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, "
    "MASTER_ADDR, MASTER_PORT)";

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> cases;
  const std::vector<std::string> required = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  for (const std::string& var : required) {
    cases.push_back({"missing_" + var, {}, {var}, ErrorKind::kMissingKey, var + kNeeds});
    cases.push_back({"empty_" + var, {{var, ""}}, {}, ErrorKind::kInvalidValue, var + " is empty"});
  }
  const std::vector<std::string> numeric = {
      "RANK",        "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
      "MASTER_PORT", "GROUP_RANK", "NODE_RANK"};
  const std::vector<std::pair<std::string, std::string>> junk = {
      {"alpha", "abc"},       {"negative", "-1"},    {"plus", "+1"},
      {"space_before", " 1"}, {"space_after", "1 "}, {"fraction", "1.0"},
      {"hex", "0x1"},         {"exponent", "1e3"},   {"unicode_digit", "\xd9\xa1"}};
  for (const std::string& var : numeric) {
    for (const auto& [label, text] : junk) {
      cases.push_back({label + "_" + var,
                       {{var, text}},
                       {},
                       ErrorKind::kInvalidValue,
                       var + "='" + text + "' is not a non-negative decimal integer"});
    }
    cases.push_back({"overflow_" + var,
                     {{var, "99999999999999999999"}},
                     {},
                     ErrorKind::kInvalidValue,
                     var + "='99999999999999999999' is out of range (at most " +
                         (var == "MASTER_PORT" ? "65535" : "2147483647") + ")"});
  }
  for (const std::string& var : {std::string("GROUP_RANK"), std::string("NODE_RANK")}) {
    cases.push_back({"empty_" + var, {{var, ""}}, {}, ErrorKind::kInvalidValue, var + " is empty"});
  }
  const auto add = [&](std::string name, Vars overrides, std::string message) {
    cases.push_back(
        {std::move(name), std::move(overrides), {}, ErrorKind::kInvalidValue, std::move(message)});
  };
  add("int_max_plus_one", {{"RANK", "2147483648"}},
      "RANK='2147483648' is out of range (at most 2147483647)");
  add("world_size_zero", {{"WORLD_SIZE", "0"}}, "WORLD_SIZE='0' is out of range (at least 1)");
  add("rank_equals_world_size", {{"RANK", "8"}}, "RANK=8 must be < WORLD_SIZE=8");
  add("rank_beyond_world_size", {{"RANK", "100"}}, "RANK=100 must be < WORLD_SIZE=8");
  add("local_world_size_zero", {{"LOCAL_WORLD_SIZE", "0"}},
      "LOCAL_WORLD_SIZE='0' is out of range (at least 1)");
  add("local_world_size_not_dividing", {{"LOCAL_WORLD_SIZE", "3"}},
      "LOCAL_WORLD_SIZE=3 must divide WORLD_SIZE=8 (every node runs the same number of ranks)");
  add("local_world_size_above_world_size", {{"LOCAL_WORLD_SIZE", "16"}},
      "LOCAL_WORLD_SIZE=16 must divide WORLD_SIZE=8 (every node runs the same number of ranks)");
  add("local_rank_equals_local_world_size", {{"LOCAL_RANK", "4"}},
      "LOCAL_RANK=4 must be < LOCAL_WORLD_SIZE=4");
  add("group_rank_beyond_nodes", {{"GROUP_RANK", "2"}},
      "GROUP_RANK=2 must be < WORLD_SIZE/LOCAL_WORLD_SIZE=2");
  add("node_rank_beyond_nodes", {{"NODE_RANK", "5"}},
      "NODE_RANK=5 must be < WORLD_SIZE/LOCAL_WORLD_SIZE=2");
  add("group_and_node_rank_disagree", {{"GROUP_RANK", "0"}, {"NODE_RANK", "1"}},
      "GROUP_RANK=0 and NODE_RANK=1 disagree");
  add("master_port_zero", {{"MASTER_PORT", "0"}}, "MASTER_PORT='0' is out of range (at least 1)");
  add("master_port_too_large", {{"MASTER_PORT", "65536"}},
      "MASTER_PORT='65536' is out of range (at most 65535)");
  add("master_port_name", {{"MASTER_PORT", "http"}},
      "MASTER_PORT='http' is not a non-negative decimal integer");
  add("master_addr_space", {{"MASTER_ADDR", "n1 n2"}}, "MASTER_ADDR='n1 n2' contains whitespace");
  add("master_addr_newline", {{"MASTER_ADDR", "n1\n"}},
      "MASTER_ADDR='n1 ' contains whitespace");  // Error::str() folds the newline
  return cases;
}

INSTANTIATE_TEST_SUITE_P(BadInput, WorldFromEnvRejects, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& param_info) {
                           return param_info.param.name;
                         });

TEST(PmixAdvertised, OnlyWhenANamespaceOrServerUriIsSet) {
  EXPECT_FALSE(pmix_advertised(reader(valid_vars())));
  EXPECT_TRUE(pmix_advertised(reader({{"PMIX_NAMESPACE", "slurm.pmix.3.0"}})));
  EXPECT_TRUE(pmix_advertised(reader({{"PMIX_SERVER_URI41", "pmix-server.1;tcp4://127.0.0.1:1"}})));
  EXPECT_TRUE(pmix_advertised(reader({{"PMIX_SERVER_URI2", "x"}})));
  EXPECT_FALSE(pmix_advertised(reader({{"PMIX_RANK", "0"}})));
}

TEST(EndpointToString, BracketsIpv6) {
  EXPECT_EQ(to_string(Endpoint{"10.0.0.1", 29500}), "10.0.0.1:29500");
  EXPECT_EQ(to_string(Endpoint{"::1", 80}), "[::1]:80");
}

}  // namespace
}  // namespace grpo::bootstrap
