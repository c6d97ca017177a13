// SlurmJobControl's node health: what `sinfo -h -N -n <nodes> -o "%N %T"` really prints (long
// state names, lower case, with sinfo's flag suffixes), through the scripted FakeProcessRunner.
#include "grpo/supervise_slurm/slurm_job_control.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grpo/test_support/fake_process_runner.h"

namespace grpo::supervise {
namespace {

class NoJobs final : public slurm::JobSource {
 public:
  core::Result<slurm::JobInfo> load_job(std::uint32_t) override {
    return core::make_error(core::ErrorKind::kUnavailable, "no controller in this test");
  }
};

TEST(SinfoNodeState, DrainedDrainingDownFailAndNotRespondingAreUnhealthy) {
  for (const char* bad : {"down", "down*", "drained", "drained*", "draining", "draining@", "fail",
                          "failing", "idle*", "mixed*", "allocated*", "idle+drain", "mixed+drain",
                          "DOWN", "Drained", "not_responding", "down~"}) {
    EXPECT_TRUE(unhealthy_node_state(bad)) << bad;
  }
  for (const char* good :
       {"idle", "mixed", "allocated", "allocated+", "completing", "mixed-", "idle~", "idle#",
        "idle!", "idle%", "reserved$", "allocated@", "mixed^", "planned", "maint", "future"}) {
    EXPECT_FALSE(unhealthy_node_state(good)) << good;
  }
}

TEST(SinfoNodeState, ParsesSinfoOutput) {
  // `sinfo -h -N -n n[1-6] -o "%N %T"` on a cluster with a drained, a draining, a failed and a
  // silent node (a node in two partitions is listed twice).
  const std::string out =
      "n1 allocated\n"
      "n2 drained\n"
      "n3 draining\n"
      "n4 mixed*\n"
      "n5 failing\n"
      "n6 mixed\n"
      "n2 drained\n";
  EXPECT_EQ(parse_unhealthy_nodes(out), (std::vector<std::string>{"n2", "n3", "n4", "n5"}));
  EXPECT_TRUE(parse_unhealthy_nodes("n1 idle\nn2 allocated+\n").empty());
  EXPECT_TRUE(parse_unhealthy_nodes("").empty());
}

TEST(SlurmJobControl, AsksSinfoAboutTheStepsNodes) {
  NoJobs jobs;
  process::FakeProcessRunner runner;
  process::FakeOutcome answer;
  answer.out = "n1 mixed\nn2 draining\n";
  runner.push(answer);
  process::FakeOutcome unreachable;
  unreachable.status = process::Exited{1};
  unreachable.err = "sinfo: error: cannot reach slurmctld\n";
  runner.push(unreachable);
  SlurmJobControlOptions o;
  o.job_id = 7;
  SlurmJobControl job(jobs, runner, o);
  auto bad = job.unhealthy_nodes({"n1", "n2"});
  ASSERT_TRUE(bad.ok()) << bad.error().str();
  EXPECT_EQ(bad.value(), std::vector<std::string>{"n2"});
  ASSERT_EQ(runner.calls().size(), 1u);
  EXPECT_EQ(runner.calls()[0].argv,
            (std::vector<std::string>{"sinfo", "-h", "-N", "-n", "n1,n2", "-o", "%N %T"}));
  auto failed = job.unhealthy_nodes({"n1"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().kind, core::ErrorKind::kUnavailable);
}

}  // namespace
}  // namespace grpo::supervise
