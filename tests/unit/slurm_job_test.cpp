// The libslurm adapter where it needs no cluster: host lists, job ids, error mapping, the
// missing-configuration refusal, and an unreachable controller.
#include "grpo/slurm/slurm_job.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace grpo::slurm {
namespace {

using core::ErrorKind;

TEST(Hostlist, ExpandsThroughLibslurm) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_hostlist("n1").value(), V{"n1"});
  EXPECT_EQ(expand_hostlist("n[1-3]").value(), (V{"n1", "n2", "n3"}));
  EXPECT_EQ(expand_hostlist("gpu[07-09],cpu1").value(), (V{"gpu07", "gpu08", "gpu09", "cpu1"}));
  EXPECT_EQ(expand_hostlist("a[1,3-4]").value(), (V{"a1", "a3", "a4"}));
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[1-2]").value(),
            (V{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}));
  EXPECT_EQ(expand_hostlist("").value(), V{});
  for (const char* text : {"n[3-1]", "n[a-b]"}) {
    auto bad = expand_hostlist(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidValue);
    EXPECT_EQ(bad.error().message, std::string("cannot parse host list \"") + text + "\"");
  }
}

TEST(JobId, Parse) {
  EXPECT_EQ(parse_job_id("1").value(), 1u);
  EXPECT_EQ(parse_job_id("4294967293").value(), 4294967293u);
  EXPECT_EQ(parse_job_id(nullptr).error().kind, ErrorKind::kMissingKey);
  EXPECT_EQ(parse_job_id(nullptr).error().message,
            "SLURM_JOB_ID is not set (run inside a Slurm job)");
  EXPECT_EQ(parse_job_id("").error().kind, ErrorKind::kMissingKey);
  for (const char* bad : {"0", "-1", "12a", " 1", "4294967294", "99999999999999999999"}) {
    EXPECT_EQ(parse_job_id(bad).error().kind, ErrorKind::kInvalidValue) << bad;
  }
}

TEST(SlurmError, ClassifiedWithSlurmsOwnText) {
  // Numbers from <slurm/slurm_errno.h> (Slurm 22.05), which tests do not include.
  const auto conn =
      slurm_error("slurm_load_job(5)", 1800);  // SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
  EXPECT_EQ(conn.kind, ErrorKind::kUnavailable);
  EXPECT_EQ(conn.message,
            "slurm_load_job(5): Unable to contact slurm controller (connect failure) (1800)");
  EXPECT_EQ(slurm_error("x", 1001).kind, ErrorKind::kUnavailable);  // SLURM_COMMUNICATIONS_...
  EXPECT_EQ(slurm_error("x", 5004).kind, ErrorKind::kUnavailable);  // socket timeout
  const auto missing = slurm_error("slurm_load_job(5)", 2017);      // ESLURM_INVALID_JOB_ID
  EXPECT_EQ(missing.kind, ErrorKind::kNotFound);
  EXPECT_EQ(missing.message, "slurm_load_job(5): Invalid job id specified (2017)");
  EXPECT_EQ(slurm_error("x", 2000).kind, ErrorKind::kInternal);  // invalid partition name
}

TEST(LibSlurm, RefusesToStartWithoutAConfiguration) {
  ::setenv("SLURM_CONF", "/nonexistent/slurm.conf", 1);
  auto lib = LibSlurm::open();
  ::unsetenv("SLURM_CONF");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(lib.error().message,
            "no Slurm configuration: /nonexistent/slurm.conf does not exist (SLURM_CONF)");
}

// A configuration whose controller port nobody listens on: load_job fails quickly with
// libslurm's own "Unable to contact slurm controller" as kUnavailable.
TEST(LibSlurm, UnreachableControllerIsUnavailable) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);  // bound but not listening: connections are refused

  const auto dir =
      std::filesystem::path(testing::TempDir()) / ("grpo-deadslurm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto conf = dir / "slurm.conf";
  std::ofstream(conf) << "ClusterName=dead\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort="
                      << port << "\nAuthType=auth/munge\nAuthInfo=socket="
                      << (dir / "munge.socket").string()
                      << "\nMessageTimeout=1\nNodeName=d1 NodeAddr=127.0.0.99 CPUs=1\n"
                         "PartitionName=debug Nodes=d1 Default=YES\n";
  ::setenv("SLURM_CONF", conf.c_str(), 1);
  {
    auto lib = LibSlurm::open();
    ASSERT_TRUE(lib.ok()) << lib.error().str();
    auto second = LibSlurm::open();
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().kind, ErrorKind::kInternal);
    auto job = lib.value()->load_job(1);
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind, ErrorKind::kUnavailable);
    EXPECT_NE(job.error().message.find("Unable to contact slurm controller"), std::string::npos)
        << job.error().message;
  }
  ::unsetenv("SLURM_CONF");
  ::close(s);
  std::filesystem::remove_all(dir);
}

TEST(JobInfo, ToAllocation) {
  JobInfo j;
  j.job_id = 9;
  j.nodes = {"n1", "n2"};
  j.tasks_per_node = 2;
  const auto a = to_allocation(j);
  EXPECT_EQ(a.job_id, 9u);
  EXPECT_EQ(a.nodes, j.nodes);
  EXPECT_EQ(a.tasks_per_node, 2);
}

}  // namespace
}  // namespace grpo::slurm
