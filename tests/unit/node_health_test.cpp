// Node health checks (node_health.h): the built-in checks over fake probes and a scripted
// process runner, and the reading of a health step's answers.
#include <gtest/gtest.h>
#include <unistd.h>
#include <cerrno>

#include <filesystem>
#include <fstream>

#include "grpo/io/files.h"
#include "grpo/process/signals.h"
#include "grpo/runlog/event_log.h"
#include "grpo/supervise/event_log_file.h"
#include "grpo/supervise/node_health.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_process_runner.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"

namespace grpo::supervise {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

HealthProbes healthy_probes() {
  HealthProbes p;
  p.write_error = [](const fs::path&) { return std::optional<core::Error>{}; };
  p.free_bytes = [](const fs::path&) { return std::optional<std::uint64_t>{100ull << 30}; };
  p.ib_ports = [] { return std::vector<std::pair<std::string, std::string>>{}; };
  return p;
}

TEST(NodeHealth, HealthyNodeRunsOnlyTheChecksThatApply) {
  process::FakeProcessRunner runner;
  HealthSpec spec;
  spec.run_dir = "/runs/r";
  spec.min_free_bytes = 10ull << 30;
  EXPECT_TRUE(check_node("n1", spec, healthy_probes(), runner).empty());
  EXPECT_TRUE(runner.calls().empty());  // CPU profile, no command: nothing is started
}

TEST(NodeHealth, AFullFileSystemIsADiskFindingNotAnUnwritableRunDir) {
  process::FakeProcessRunner runner;
  HealthProbes p = healthy_probes();
  // What the real probe returns when its create fails with ENOSPC (io::errno_error's mapping).
  p.write_error = [](const fs::path& d) {
    return std::optional<core::Error>(io::errno_error("cannot create", d / ".health-1", ENOSPC));
  };
  HealthSpec spec;
  spec.run_dir = "/runs/r";
  const auto f = check_node("n1", spec, p, runner);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].check, "disk");  // the supervisor gives up with 85 when every node says so
  EXPECT_EQ(f[0].detail,
            "the run directory is not writable: cannot create /runs/r/.health-1: No space left on "
            "device");
}

TEST(NodeHealth, EachFailedCheckIsOneFinding) {
  process::FakeProcessRunner runner;
  const auto failing = [](int code, const char* err) {
    process::FakeOutcome o;
    o.status = process::Exited{code};
    o.err = err;
    return o;
  };
  runner.push(failing(9, "NVIDIA-SMI has failed\n"));  // nvidia-smi -L
  runner.push(failing(1, "lustre not mounted\n"));     // --health-check
  HealthProbes p = healthy_probes();
  p.write_error = [](const fs::path& d) {
    return std::optional<core::Error>(
        core::make_error(core::ErrorKind::kIo, d.string() + ": Read-only file system"));
  };
  // 3 GiB free, the newest checkpoint 2 GiB: 2 x 2 GiB = 4 GiB needed.
  p.free_bytes = [](const fs::path&) { return std::optional<std::uint64_t>{3ull << 30}; };
  p.ib_ports = [] {
    return std::vector<std::pair<std::string, std::string>>{{"mlx5_0/1", "4: ACTIVE"},
                                                            {"mlx5_1/1", "1: DOWN"}};
  };
  HealthSpec spec;
  spec.run_dir = "/runs/r";
  spec.min_free_bytes = 2 * (2ull << 30);
  spec.gpus = true;
  spec.command = {"/opt/check.sh", "--quick"};
  const auto f = check_node("n2", spec, p, runner);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].check, "run_dir");
  EXPECT_EQ(f[0].detail, "the run directory is not writable: /runs/r: Read-only file system");
  EXPECT_EQ(f[1].check, "disk");
  EXPECT_NE(f[1].detail.find("need"), std::string::npos) << f[1].detail;
  EXPECT_EQ(f[2].check, "gpu");
  EXPECT_EQ(f[2].detail, "nvidia-smi does not answer: nvidia-smi: exit 9 (NVIDIA-SMI has failed)");
  EXPECT_EQ(f[3].check, "infiniband");
  EXPECT_EQ(f[3].detail, "port mlx5_1/1 is 1: DOWN, not ACTIVE");
  EXPECT_EQ(f[4].check, "command");
  EXPECT_EQ(f[4].detail, "--health-check failed: /opt/check.sh: exit 1 (lustre not mounted)");
  for (const auto& x : f) EXPECT_EQ(x.node, "n2");
  ASSERT_EQ(runner.calls().size(), 2u);
  EXPECT_EQ(runner.calls()[0].argv, (std::vector<std::string>{"nvidia-smi", "-L"}));
  EXPECT_EQ(runner.calls()[1].argv, spec.command);
}

TEST(NodeHealth, CommandThatHangsOrIsMissingIsUnhealthy) {
  process::FakeProcessRunner runner;
  process::FakeOutcome hung;
  hung.timed_out = true;
  hung.status = process::Signaled{15};
  runner.push(hung);
  process::FakeOutcome missing;
  missing.error = core::make_error(core::ErrorKind::kNotFound, "check.sh: not found on PATH");
  runner.push(missing);
  HealthSpec spec;
  spec.run_dir = "/r";
  spec.command = {"check.sh"};
  spec.command_timeout_s = 5;
  auto f = check_node("n1", spec, healthy_probes(), runner);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].detail, "--health-check failed: check.sh did not answer within 5 s");
  f = check_node("n1", spec, healthy_probes(), runner);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].detail, "--health-check failed: check.sh: not found on PATH");
}

TEST(NodeHealth, AnswersOfAStepAreReadPerNode) {
  // srun --label output of a 3-node step: n1 healthy, n2 one finding, n3 never answered.
  const std::vector<std::string> lines = {
      R"(0: {"health":"done","node":"n1","healthy":true})",
      R"(1: {"health":"unhealthy","node":"n2","check":"gpu","detail":"nvidia-smi: exit 9"})",
      "1: some noise",
      R"(1: {"health":"done","node":"n2","healthy":false})",
      R"({"health":"unhealthy","node":"elsewhere","check":"disk","detail":"not ours"})",
  };
  const auto f = read_health_answers({"n1", "n2", "n3"}, lines);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].node, "n2");
  EXPECT_EQ(f[0].check, "gpu");
  EXPECT_EQ(f[0].detail, "nvidia-smi: exit 9");
  EXPECT_EQ(f[1].node, "n3");
  EXPECT_EQ(f[1].check, "no_report");
}

TEST(NodeHealth, TheLinesAreTheContractOfTheReader) {
  // The writer's lines, as the documented JSON (docs/supervisor.md), read back.
  EXPECT_EQ(finding_line({"n1", "disk", "1 GiB free"}),
            R"({"check":"disk","detail":"1 GiB free","health":"unhealthy","node":"n1"})");
  EXPECT_EQ(done_line("n1", true), R"({"health":"done","healthy":true,"node":"n1"})");
}

TEST(NodeHealth, NewestCheckpointSizeCountsItsFiles) {
  const fs::path d = fs::temp_directory_path() / ("grpo-health-" + std::to_string(::getpid()));
  fs::remove_all(d);
  EXPECT_EQ(newest_checkpoint_bytes(d), 0u);
  const auto write = [](const fs::path& p, std::size_t n) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << std::string(n, 'x');
  };
  write(d / "checkpoints/step_00000002/manifest.json", 10);
  write(d / "checkpoints/step_00000002/model.safetensors", 1000);
  write(d / "checkpoints/step_00000004/manifest.json", 20);
  write(d / "checkpoints/step_00000004/model.safetensors", 2000);
  write(d / "checkpoints/step_00000004/optim/rank0.safetensors", 300);
  write(d / "checkpoints/step_00000006.tmp/model.safetensors", 99999);  // not committed
  EXPECT_EQ(newest_checkpoint_bytes(d), 20u + 2000u + 300u);
  fs::remove_all(d);
}

// --- the supervisor's side: before every attempt ------------------------------------------

struct HealthLoop {
  FakeClock clock;
  SimulatedRunner runner{clock};
  process::FakeSignals signals;
  FakeJobControl job;
  NullStatusSink status;
  fs::path dir;
  SupervisorOptions opts;
  std::vector<std::vector<std::string>> asked;  // the nodes of every health check
  std::function<std::vector<HealthFinding>(const std::vector<std::string>&)> answer;

  explicit HealthLoop(const std::string& name)
      : dir(fs::temp_directory_path() /
            ("grpo-health-loop-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    opts.run_dir = dir;
    opts.trainer_argv = {"grpo-trainer"};
    opts.config.total_steps = 4;
  }
  ~HealthLoop() { fs::remove_all(dir); }
  int run() {
    SupervisorDeps deps{runner, clock, signals, job, status, [] { return std::int64_t{-1}; },
                        nullptr};
    deps.health =
        [this](const std::vector<std::string>& nodes) -> core::Result<std::vector<HealthFinding>> {
      asked.push_back(nodes);
      return answer(nodes);
    };
    auto sup = Supervisor::open(opts, deps);
    EXPECT_TRUE(sup.ok());
    if (!sup.ok()) return -1;
    auto code = sup.value()->run();
    EXPECT_TRUE(code.ok());
    return code.ok() ? code.value() : -1;
  }
  std::vector<json> of(const std::string& type) const {
    std::vector<json> out;
    auto log = read_event_log(dir / "events.jsonl");
    if (!log.ok()) return out;
    for (auto& e : log->events) {
      if (e["type"] == type) out.push_back(e);
    }
    return out;
  }
};

TEST(NodeHealthLoop, LocallyAnUnhealthyNodeEndsTheRunWith84BeforeAnyAttempt) {
  HealthLoop l("local");
  l.job.slurm = false;
  l.opts.ranks_per_node = 2;
  l.answer = [](const std::vector<std::string>& nodes) {
    return std::vector<HealthFinding>{
        {nodes.front(), "command", "--health-check failed: false: exit 1"}};
  };
  EXPECT_EQ(l.run(), kExitNodesLost);
  ASSERT_EQ(l.asked.size(), 1u);
  EXPECT_EQ(l.asked[0], (std::vector<std::string>{"localhost"}));
  EXPECT_TRUE(l.runner.started().empty());
  const auto bad = l.of("node_unhealthy");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0]["node"], "localhost");
  EXPECT_EQ(bad[0]["check"], "command");
  EXPECT_EQ(bad[0]["detail"], "--health-check failed: false: exit 1");
  EXPECT_EQ(bad[0]["excluded"], false);
  const auto d = l.of("decision");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0]["kind"], "give_up");
  EXPECT_EQ(d[0]["exit_code"], kExitNodesLost);
  EXPECT_EQ(d[0]["reason"],
            "node localhost is unhealthy (command: --health-check failed: false: exit 1); there "
            "is no other node to run on");
  EXPECT_EQ(l.of("run_finished").back()["exit_code"], kExitNodesLost);
}

TEST(NodeHealthLoop, UnderSlurmAnUnhealthyNodeIsExcludedAndAnotherOneChecked) {
  HealthLoop l("slurm");
  l.job.nodes = {"n1", "n2", "n3"};
  l.opts.nodes = 2;
  l.opts.ranks_per_node = 1;
  l.opts.config.min_nodes = 2;
  l.answer = [](const std::vector<std::string>& nodes) {
    std::vector<HealthFinding> out;
    for (const auto& n : nodes) {
      if (n == "n2") out.push_back({n, "gpu", "nvidia-smi does not answer: exit 9"});
    }
    return out;
  };
  l.runner.push(sim_trainer(2, 0, 4, 1.0, 2));
  EXPECT_EQ(l.run(), kExitSucceeded);
  // n1, n2 checked; n2 excluded; n1, n3 checked; the attempt runs there without n2.
  ASSERT_EQ(l.asked.size(), 2u);
  EXPECT_EQ(l.asked[0], (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(l.asked[1], (std::vector<std::string>{"n1", "n3"}));
  ASSERT_EQ(l.runner.started().size(), 1u);
  EXPECT_EQ(l.runner.started()[0].exclude, (std::vector<std::string>{"n2"}));
  EXPECT_EQ(l.of("attempt_started")[0]["hosts"], json::array({"n1", "n3"}));
  const auto bad = l.of("node_unhealthy");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0]["node"], "n2");
  EXPECT_EQ(bad[0]["excluded"], true);
  // `status` (the replayed summary) lists it among the excluded nodes.
  auto log = read_event_log(l.dir / "events.jsonl");
  ASSERT_TRUE(log.ok());
  auto summary = replay(log->events);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->excluded, (std::vector<std::string>{"n2"}));
}

TEST(NodeHealthLoop, TooFewHealthyNodesLeftEndsWith84) {
  HealthLoop l("few");
  l.job.nodes = {"n1", "n2"};
  l.opts.nodes = 2;
  l.opts.ranks_per_node = 1;
  l.opts.config.min_nodes = 2;
  l.answer = [](const std::vector<std::string>&) {
    return std::vector<HealthFinding>{{"n2", "disk", "1 GiB free, need 4 GiB"}};
  };
  EXPECT_EQ(l.run(), kExitNodesLost);
  EXPECT_TRUE(l.runner.started().empty());
}

TEST(NodeHealthLoop, AStepFromWhichNoNodeAnsweredIsTheChecksOwnFailure) {
  HealthLoop l("silent");
  l.job.nodes = {"n1", "n2"};
  l.opts.nodes = 2;
  l.opts.ranks_per_node = 1;
  l.answer = [](const std::vector<std::string>& nodes) {
    return read_health_answers(nodes, {"srun: error: something"});
  };
  l.runner.push(sim_trainer(2, 0, 4, 1.0, 2));
  EXPECT_EQ(l.run(), kExitSucceeded);
  EXPECT_TRUE(l.of("node_unhealthy").empty());
  EXPECT_EQ(l.of("warning").at(0)["kind"], "health_check");
}

}  // namespace
}  // namespace grpo::supervise
