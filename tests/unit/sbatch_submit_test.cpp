// sbatch: output parsing, error classification, submit_batch through the fake runner.
#include <gtest/gtest.h>
#include <signal.h>

#include "grpo/slurm/sbatch.h"
#include "grpo/test_support/fake_process_runner.h"

namespace grpo::slurm {

using process::CommandSpec;
using process::Exited;
using process::FakeOutcome;
using process::FakeProcessRunner;
using process::Signaled;
using process::Stream;
namespace {

using core::ErrorKind;

TEST(SbatchParse, Parsable) {
  auto a = parse_sbatch_parsable("42\n");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->job_id, 42u);
  EXPECT_EQ(a->cluster, "");
  auto b = parse_sbatch_parsable("1234;cluster-a\n");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->job_id, 1234u);
  EXPECT_EQ(b->cluster, "cluster-a");
  auto c = parse_sbatch_parsable("  \n4294967295\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->job_id, 4294967295u);
  for (const char* bad :
       {"", "\n", "Submitted batch job 42", "abc", "0", "-1", "4294967296", "12345678901", "42x"}) {
    auto r = parse_sbatch_parsable(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().kind, ErrorKind::kInternal);
    }
  }
}

TEST(SbatchParse, Reason) {
  EXPECT_EQ(sbatch_reason("sbatch: error: Batch job submission failed: Invalid partition name "
                          "specified\n"),
            "Batch job submission failed: Invalid partition name specified");
  EXPECT_EQ(sbatch_reason("sbatch: warning: x\nsbatch: error: first\nsbatch: error: last\n"),
            "last");
  EXPECT_EQ(sbatch_reason("something odd\n\n"), "something odd");
  EXPECT_EQ(sbatch_reason(""), "");
  EXPECT_TRUE(is_unreachable_message(
      "Batch job submission failed: Unable to contact slurm controller (connect failure)"));
  EXPECT_TRUE(is_unreachable_message("Munge encode failed: Failed to access socket"));
  EXPECT_TRUE(is_unreachable_message("Could not establish a configuration source"));
  EXPECT_TRUE(is_unreachable_message("s_p_parse_file: unable to status file /x/slurm.conf"));
  EXPECT_FALSE(
      is_unreachable_message("Batch job submission failed: Invalid partition name "
                             "specified"));
  EXPECT_FALSE(is_unreachable_message(
      "Batch job submission failed: Requested node configuration is not available"));
}

struct Submit : testing::Test {
  FakeProcessRunner fake;
  SubmitRequest request{"/runs/r/job.sbatch", "sbatch", std::chrono::milliseconds(5000)};
};

TEST_F(Submit, Success) {
  FakeOutcome ok;
  ok.out = "77\n";
  fake.push(ok);
  bool maybe = true;
  auto r = submit_batch(fake, request, &maybe);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->job_id, 77u);
  EXPECT_FALSE(maybe);
  ASSERT_EQ(fake.calls().size(), 1u);
  const CommandSpec& c = fake.calls()[0];
  EXPECT_EQ(c.argv, (std::vector<std::string>{"sbatch", "--parsable", "/runs/r/job.sbatch"}));
  EXPECT_EQ(c.timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(c.out, Stream::kCapture);
  for (const char* v : {"SBATCH_OUTPUT", "SBATCH_ERROR", "SBATCH_SIGNAL", "SBATCH_OPEN_MODE",
                        "SBATCH_NO_REQUEUE", "SBATCH_EXPORT"}) {
    EXPECT_NE(std::find(c.unset_env.begin(), c.unset_env.end(), v), c.unset_env.end()) << v;
  }
}

TEST_F(Submit, Rejected) {
  FakeOutcome no;
  no.status = Exited{1};
  no.err = "sbatch: error: Batch job submission failed: Invalid partition name specified\n";
  fake.push(no);
  bool maybe = true;
  auto r = submit_batch(fake, request, &maybe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kRejected);
  EXPECT_EQ(r.error().message,
            "sbatch rejected the job: Batch job submission failed: Invalid partition name "
            "specified");
  EXPECT_FALSE(maybe);
}

TEST_F(Submit, Unreachable) {
  FakeOutcome down;
  down.status = Exited{1};
  down.err =
      "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect "
      "failure)\n";
  fake.push(down);
  auto r = submit_batch(fake, request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(r.error().message,
            "Slurm is unreachable: sbatch: Batch job submission failed: Unable to contact slurm "
            "controller (connect failure)");
}

TEST_F(Submit, NotInstalled) {
  FakeOutcome missing;
  missing.error = core::make_error(ErrorKind::kNotFound, "sbatch: not found on PATH");
  fake.push(missing);
  auto r = submit_batch(fake, request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(r.error().message,
            "Slurm is unreachable: sbatch: not found on PATH (is Slurm installed, and is this a "
            "login node?)");
}

TEST_F(Submit, TimeoutAndSignalLeaveTheOutcomeUnknown) {
  FakeOutcome slow;
  slow.timed_out = true;
  slow.status = Signaled{SIGTERM};
  fake.push(slow);
  bool maybe = false;
  auto r = submit_batch(fake, request, &maybe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(r.error().message.find("sbatch timed out after 5 s"), std::string::npos);
  EXPECT_TRUE(maybe);

  FakeOutcome killed;
  killed.status = Signaled{SIGKILL};
  fake.push(killed);
  maybe = false;
  r = submit_batch(fake, request, &maybe);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(maybe);

  FakeOutcome garbage;
  garbage.out = "Submitted batch job 5\n";
  fake.push(garbage);
  maybe = false;
  r = submit_batch(fake, request, &maybe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInternal);
  EXPECT_TRUE(maybe);  // sbatch said yes; we could not read the id
}

TEST_F(Submit, ExitWithoutMessage) {
  FakeOutcome quiet;
  quiet.status = Exited{2};
  fake.push(quiet);
  auto r = submit_batch(fake, request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kRejected);
  EXPECT_EQ(r.error().message, "sbatch rejected the job: exit 2");
}

}  // namespace
}  // namespace grpo::slurm
