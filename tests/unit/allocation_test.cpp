// The allocation check against a fake JobSource, the real signal handlers and signal names.
#include "grpo/slurm/allocation.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "grpo/process/signals.h"

namespace grpo::slurm {

using process::ProcessSignals;
using process::signal_name;
namespace {

using core::ErrorKind;

class FakeJobs final : public JobSource {
 public:
  std::optional<JobInfo> job;
  core::Result<JobInfo> load_job(std::uint32_t id) override {
    asked.push_back(id);
    if (!job) return core::make_error(ErrorKind::kUnavailable, "controller down");
    return *job;
  }
  std::vector<std::uint32_t> asked;
};

core::RunSpec spec_2x2() {
  core::RunSpec s;
  s.run_id = "r";
  s.nodes = 2;
  s.ranks_per_node = 2;
  s.cpus_per_task = 2;
  s.trainer_command = {"/bin/probe", "--timeout-s", "30"};
  return s;
}

TEST(DiscoverAllocation, ChecksTheRankMap) {
  FakeJobs jobs;
  JobInfo j;
  j.job_id = 5;
  j.nodes = {"n1", "n2"};
  j.tasks_per_node = 2;
  jobs.job = j;
  auto ok = discover_allocation(jobs, 5, spec_2x2());
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ(jobs.asked, std::vector<std::uint32_t>{5});

  jobs.job->nodes = {"n1"};
  auto few = discover_allocation(jobs, 5, spec_2x2());
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.error().message, "job 5 has 1 node(s), the rank map needs 2");

  jobs.job->nodes = {"n1", "n2"};
  jobs.job->tasks_per_node = 4;
  auto tasks = discover_allocation(jobs, 5, spec_2x2());
  ASSERT_FALSE(tasks.ok());
  EXPECT_EQ(tasks.error().message, "job 5 runs 4 task(s) per node, the rank map needs 2");

  jobs.job.reset();
  EXPECT_EQ(discover_allocation(jobs, 5, spec_2x2()).error().kind, ErrorKind::kUnavailable);
}

// Names as kill -l prints them with the SIG prefix; numbers without a name stay numbers.
TEST(SignalName, NamesAndNumbers) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGUSR2), "SIGUSR2");
  EXPECT_EQ(signal_name(SIGSTOP), "SIGSTOP");
  EXPECT_EQ(signal_name(0), "signal 0");
  EXPECT_EQ(signal_name(1000), "signal 1000");
}

TEST(ProcessSignals, CatchesAndRestores) {
  {
    auto sigs = ProcessSignals::install();
    ASSERT_TRUE(sigs.ok());
    EXPECT_FALSE(ProcessSignals::install().ok());  // one at a time
    EXPECT_EQ(sigs.value()->take(), std::nullopt);
    ::raise(SIGUSR2);
    ::raise(SIGTERM);
    EXPECT_EQ(sigs.value()->take(), std::optional<int>(SIGTERM));
    EXPECT_EQ(sigs.value()->take(), std::optional<int>(SIGUSR2));
    EXPECT_EQ(sigs.value()->take(), std::nullopt);
  }
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace grpo::slurm
