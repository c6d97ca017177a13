// A Supervisor on simulated parts (a fake clock, the scripted attempt runner, fake signals and job
// control) in a temporary run directory: the set-up the supervisor's unit tests share. Header-only
// and for gtest tests only (a failed open or run is a test failure).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grpo/runlog/event_log.h"
#include "grpo/supervise/event_log_file.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"

namespace grpo::supervise {

struct SupervisorHarness {
  FakeClock clock;
  SimulatedRunner runner{clock};
  process::FakeSignals signals;
  FakeJobControl job;
  NullStatusSink status;
  std::filesystem::path dir;
  SupervisorOptions opts;
  // SupervisorDeps::health (empty: no health checks).
  std::function<core::Result<std::vector<HealthFinding>>(const std::vector<std::string>&)> health;
  // SupervisorDeps::exporter (null: the real export, which these runs never reach).
  RunExporter* exporter = nullptr;
  std::unique_ptr<Supervisor> sup;

  // A local run (no Slurm) of tiny-moe on 1 node x 2 ranks, 10 steps, a 5 s hang limit, in
  // <tmp>/grpo-sup-<name>-<pid> (removed at the end).
  explicit SupervisorHarness(const std::string& name)
      : dir(std::filesystem::temp_directory_path() /
            ("grpo-sup-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    job.slurm = false;
    opts.run_dir = dir;
    opts.profile = "local-cpu";
    opts.model = "tiny-moe";
    opts.trainer_argv = {"grpo-trainer", "--model", "tiny-moe"};
    opts.nodes = 1;
    opts.ranks_per_node = 2;
    opts.config.total_steps = 10;
    opts.config.hang.timeout_s = 5;
    opts.config.min_nodes = 1;
  }
  ~SupervisorHarness() { std::filesystem::remove_all(dir); }
  SupervisorHarness(const SupervisorHarness&) = delete;
  SupervisorHarness& operator=(const SupervisorHarness&) = delete;

  void push(SimAttempt a) { runner.push(std::move(a)); }

  // Opens the supervisor on the run directory (replaying its log) and runs it to the end: the
  // exit code, or -1 (and a test failure) when it cannot open or run. The newest checkpoint is
  // the one the supervisor's own summary knows (the simulated ranks write none to disk).
  int run() {
    Supervisor* self = nullptr;
    SupervisorDeps deps{runner,
                        clock,
                        signals,
                        job,
                        status,
                        [&self] {
                          return self != nullptr ? self->summary().latest_checkpoint_step
                                                 : std::int64_t{-1};
                        },
                        health,
                        exporter};
    auto opened = Supervisor::open(opts, deps);
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().str());
    if (!opened.ok()) return -1;
    sup = std::move(opened).value();
    self = sup.get();
    auto code = sup->run();
    EXPECT_TRUE(code.ok()) << (code.ok() ? "" : code.error().str());
    return code.ok() ? code.value() : -1;
  }

  // The run's events.jsonl, in order.
  std::vector<nlohmann::json> events() const {
    auto log = read_event_log(dir / "events.jsonl");
    EXPECT_TRUE(log.ok());
    return log.ok() ? log->events : std::vector<nlohmann::json>{};
  }
  // Its events of one type.
  std::vector<nlohmann::json> of(const std::string& type) const {
    std::vector<nlohmann::json> out;
    for (auto& e : events()) {
      if (e["type"] == type) out.push_back(e);
    }
    return out;
  }
};

}  // namespace grpo::supervise
