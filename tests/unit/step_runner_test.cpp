// The job step: allocation discovery against a fake JobSource, run_step with the fake process
// runner and scripted signals (every outcome), real signal handlers, and supervise's exit codes.
#include "grpo/slurm/step_runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "exit_codes.h"
#include "grpo/slurm/fake_process_runner.h"

namespace grpo::slurm {
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

StepRequest request() {
  StepRequest r;
  r.argv = core::srun_command(spec_2x2());
  r.env = {{"OMP_NUM_THREADS", "2"}};
  r.poll = std::chrono::milliseconds(1);
  return r;
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

TEST(RunStep, Succeeded) {
  FakeProcessRunner fake;
  FakeOutcome o;
  o.running_polls = 3;
  fake.push(o);
  FakeSignals none;
  auto r = run_step(fake, none, request());
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(std::holds_alternative<core::StepSucceeded>(r.value()));
  ASSERT_EQ(fake.calls().size(), 1u);
  const CommandSpec& c = fake.calls()[0];
  EXPECT_EQ(c.argv, request().argv);
  EXPECT_EQ(c.env, request().env);
  EXPECT_EQ(c.out, Stream::kInherit);
  EXPECT_EQ(c.err, Stream::kInherit);
  EXPECT_TRUE(c.new_process_group);
  EXPECT_EQ(cli::exit_code_for(r.value()), 0);
}

TEST(RunStep, FailedAndKilled) {
  FakeProcessRunner fake;
  FakeOutcome failed;
  failed.status = Exited{143};
  fake.push(failed);
  FakeOutcome killed;
  killed.status = Signaled{SIGKILL};
  fake.push(killed);
  FakeSignals none;
  auto a = run_step(fake, none, request());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(std::holds_alternative<core::StepFailed>(a.value()));
  EXPECT_EQ(std::get<core::StepFailed>(a.value()).exit_code, 143);
  EXPECT_EQ(core::describe(a.value()), "failed: srun exited 143");
  EXPECT_EQ(cli::exit_code_for(a.value()), cli::kExitStepFailed);
  auto b = run_step(fake, none, request());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(std::holds_alternative<core::StepKilled>(b.value()));
  EXPECT_EQ(core::describe(b.value()), "srun was killed by SIGKILL");
  EXPECT_EQ(cli::exit_code_for(b.value()), cli::kExitStepFailed);
}

TEST(RunStep, SignalsAreForwardedAndReported) {
  FakeProcessRunner fake;
  FakeOutcome o;
  o.running_polls = 100;
  o.ends_on_signal = true;
  o.status_on_signal = Exited{143};
  fake.push(o);
  FakeSignals sigs;
  sigs.push(SIGUSR2, 5);
  auto r = run_step(fake, sigs, request());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(std::holds_alternative<core::StepInterrupted>(r.value()));
  const auto& i = std::get<core::StepInterrupted>(r.value());
  EXPECT_EQ(i.signal, SIGUSR2);
  EXPECT_EQ(i.exit_code, 143);
  EXPECT_EQ(fake.signals(), std::vector<int>{SIGUSR2});
  EXPECT_EQ(core::describe(r.value()), "interrupted by SIGUSR2 (srun exited 143)");
  EXPECT_EQ(cli::exit_code_for(r.value()), cli::kExitInterrupted);
}

TEST(RunStep, SrunMissingIsUnavailable) {
  FakeProcessRunner fake;
  FakeOutcome missing;
  missing.error = core::make_error(ErrorKind::kNotFound, "srun: not found on PATH");
  fake.push(missing);
  FakeSignals none;
  auto r = run_step(fake, none, request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(r.error().message, "cannot start the job step: srun: not found on PATH");
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
