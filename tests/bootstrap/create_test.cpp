// Bootstrap::create() with an injected environment. The PMIx cases call the real PMIx_Init, which
// returns quickly with an error because this process has no PMIx server (PMIX_* are not in the
// real environment; the injected reader only decides whether PMIx is tried).
#include <gtest/gtest.h>

#include <cstdlib>

#include "fake_env.h"
#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap {
namespace {

using core::ErrorKind;
using testing::reader;
using testing::valid_vars;
using testing::Vars;

TEST(Create, EnvModeWithoutPmix) {
  auto boot = Bootstrap::create(reader(valid_vars()));
  ASSERT_TRUE(boot.ok()) << boot.error().str();
  const WorldInfo& world = (*boot)->world();
  EXPECT_EQ(world.source, Source::kEnv);
  EXPECT_EQ(world.global_rank, 5);
  EXPECT_EQ(world.hostname, local_hostname());
  EXPECT_TRUE(world.pmix_fallback_reason.empty());
  EXPECT_EQ(to_string(world.source), "env");
}

TEST(Create, PropagatesEnvErrors) {
  Vars vars = valid_vars();
  vars.erase("WORLD_SIZE");
  auto boot = Bootstrap::create(reader(vars));
  ASSERT_FALSE(boot.ok());
  EXPECT_EQ(boot.error().kind, ErrorKind::kMissingKey);
}

TEST(Create, HintsAtMpiPmixUnderSrunWithoutPmix) {
  auto boot = Bootstrap::create(reader({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}}));
  ASSERT_FALSE(boot.ok());
  EXPECT_EQ(boot.error().kind, ErrorKind::kMissingKey);
  EXPECT_EQ(boot.error().str(),
            "WORLD_SIZE is not set (env bootstrap needs RANK, WORLD_SIZE, LOCAL_RANK, "
            "LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); SLURM_PROCID is set but PMIx is not: "
            "launch with srun --mpi=pmix");
}

TEST(Create, EnvExchangeReturnsTheFixedEndpoint) {
  auto boot = Bootstrap::create(reader(valid_vars()));
  ASSERT_TRUE(boot.ok()) << boot.error().str();
  auto got = (*boot)->exchange_rendezvous(std::nullopt);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(*got, (Endpoint{"n1.example", 29500}));
  // Rank 0 listening on MASTER_PORT under another spelling of the host is fine...
  got = (*boot)->exchange_rendezvous(Endpoint{"10.1.2.3", 29500});
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(*got, (Endpoint{"n1.example", 29500}));
  // ...on another port it is not.
  got = (*boot)->exchange_rendezvous(Endpoint{"10.1.2.3", 29501});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::kInvalidValue);
  EXPECT_EQ(got.error().str(),
            "rank 0 listens on 10.1.2.3:29501 but MASTER_PORT=29500 (env mode: rank 0 must "
            "listen on MASTER_ADDR:MASTER_PORT)");
  EXPECT_TRUE((*boot)->barrier().ok());
}

class CreateWithUnreachablePmix : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("PMIX_NAMESPACE") != nullptr) {
      GTEST_FAIL() << "run the unit tests outside a PMIx job (PMIX_NAMESPACE is set)";
    }
  }
};

TEST_F(CreateWithUnreachablePmix, FallsBackToEnvAndSaysWhy) {
  Vars vars = valid_vars();
  vars["PMIX_NAMESPACE"] = "slurm.pmix.999.0";
  auto boot = Bootstrap::create(reader(vars));
  ASSERT_TRUE(boot.ok()) << boot.error().str();
  const WorldInfo& world = (*boot)->world();
  EXPECT_EQ(world.source, Source::kEnv);
  EXPECT_EQ(world.pmix_fallback_reason.rfind("PMIx_Init: ", 0), 0u) << world.pmix_fallback_reason;
}

TEST_F(CreateWithUnreachablePmix, IsUnavailableWithoutEnvFallback) {
  auto boot = Bootstrap::create(reader({{"PMIX_NAMESPACE", "slurm.pmix.999.0"}}));
  ASSERT_FALSE(boot.ok());
  EXPECT_EQ(boot.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(boot.error().message.find("PMIx_Init: "), std::string::npos) << boot.error().str();
  EXPECT_NE(boot.error().message.find("RANK/WORLD_SIZE are not set"), std::string::npos);
}

TEST_F(CreateWithUnreachablePmix, ReportsEnvErrorsWhenTheFallbackIsBroken) {
  Vars vars = valid_vars();
  vars["PMIX_NAMESPACE"] = "slurm.pmix.999.0";
  vars["RANK"] = "x";
  auto boot = Bootstrap::create(reader(vars));
  ASSERT_FALSE(boot.ok());
  EXPECT_EQ(boot.error().kind, ErrorKind::kInvalidValue);
  EXPECT_EQ(boot.error().str(), "RANK='x' is not a non-negative decimal integer");
}

}  // namespace
}  // namespace grpo::bootstrap
