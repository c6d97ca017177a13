// The Hugging Face export at the end of a run (`run`/`submit --export-hf`, supervisor_export.cpp,
// docs/supervisor.md "Export at the end"): on the simulated runner with a scripted exporter, the
// events the supervisor writes, its exit code, the status lines, and a supervisor that stopped
// during the export finishing it on its next start. The real export (grpo-launch export's code
// on a real checkpoint) is tested by trainer.hf_export and trainer.dataset_gsm8k_run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "grpo/runlog/event_log.h"
#include "grpo/runlog/run_view.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"
#include "grpo/test_support/supervisor_harness.h"

namespace grpo::supervise {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The scripted exporter: its calls, and what it answers.
struct ScriptedExporter : RunExporter {
  FakeClock& clock;
  std::vector<std::pair<fs::path, fs::path>> calls;
  core::Result<std::int64_t> answer = std::int64_t{10};
  double export_s = 2.5;  // fake seconds the export takes

  explicit ScriptedExporter(FakeClock& c) : clock(c) {}
  core::Result<std::int64_t> export_newest(const fs::path& run_dir, const fs::path& out) override {
    calls.emplace_back(run_dir, out);
    clock.advance(export_s);
    return answer;
  }
};

struct ExportRun : SupervisorHarness {
  ScriptedExporter scripted{clock};
  std::vector<std::pair<fs::path, fs::path>>& calls = scripted.calls;
  core::Result<std::int64_t>& answer = scripted.answer;

  explicit ExportRun(const std::string& name) : SupervisorHarness("export-" + name) {
    opts.config.budget.max_restarts = 0;
    opts.config.export_hf = true;
    exporter = &scripted;
  }

  // The supervisor's own event types from the first `from` on.
  std::vector<std::string> own_types_from(const std::string& from) const {
    std::vector<std::string> out;
    for (const json& e : events()) {
      if (e.value("source", "") == "trainer") continue;
      if (!out.empty() || e["type"] == from) out.push_back(e["type"]);
    }
    return out;
  }
  const RunSummary summary() const {
    auto s = replay(events());
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : RunSummary{};
  }
};

TEST(SupervisorExport, ASucceededRunIsExportedIntoRunDirHf) {
  ExportRun r("ok");
  r.runner.push(sim_trainer(2, 0, 10, 1.0, 5));
  EXPECT_EQ(r.run(), kExitSucceeded);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].first, r.dir);
  EXPECT_EQ(r.calls[0].second, r.dir / "hf");
  // After training's end, before run_finished (which a restarted supervisor checks).
  EXPECT_EQ(r.own_types_from("attempt_ended"),
            (std::vector<std::string>{"attempt_ended", "state", "hf_exported", "run_finished"}));
  for (const json& e : r.events()) {
    if (e["type"] == "hf_exported") {
      EXPECT_EQ(e["path"], (r.dir / "hf").string());
      EXPECT_EQ(e["step"], 10);
      EXPECT_DOUBLE_EQ(e["seconds"].get<double>(), 2.5);
    }
    if (e["type"] == "run_finished") {
      EXPECT_EQ(e["state"], "succeeded");
      EXPECT_EQ(e["exit_code"], 0);
    }
  }
  const RunSummary s = r.summary();
  ASSERT_TRUE(s.hf_export.has_value());
  EXPECT_TRUE(s.hf_export->ok);
  const std::string text = render_status(s, r.dir.string(), s.last_time);
  EXPECT_NE(text.find("hf export  " + (r.dir / "hf").string() + " (step 10, 2.5 s)\n"),
            std::string::npos)
      << text;
}

TEST(SupervisorExport, AFailedExportLeavesTheRunSucceededAndExits86) {
  ExportRun r("fail");
  r.answer = core::make_error(core::ErrorKind::kIo, "no space left on device");
  r.runner.push(sim_trainer(2, 0, 10, 1.0, 5));
  EXPECT_EQ(r.run(), 86);
  EXPECT_EQ(
      r.own_types_from("attempt_ended"),
      (std::vector<std::string>{"attempt_ended", "state", "hf_export_failed", "run_finished"}));
  for (const json& e : r.events()) {
    if (e["type"] == "hf_export_failed") {
      EXPECT_EQ(e["path"], (r.dir / "hf").string());
      EXPECT_EQ(e["message"], "no space left on device");
    }
    if (e["type"] == "run_finished") {
      EXPECT_EQ(e["state"], "succeeded");
      EXPECT_EQ(e["exit_code"], 86);
    }
  }
  const RunSummary s = r.summary();
  EXPECT_EQ(s.state, RunState::kSucceeded);
  const std::string text = render_status(s, r.dir.string(), s.last_time);
  EXPECT_NE(text.find("state      succeeded (exit 86)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("hf export  failed: no space left on device\n"), std::string::npos) << text;
  // A supervisor started again on the finished run does nothing more.
  EXPECT_EQ(r.run(), kExitSucceeded);
  EXPECT_EQ(r.calls.size(), 1u);
}

TEST(SupervisorExport, NotAskedOrNotSucceededNoExport) {
  ExportRun plain("plain");
  plain.opts.config.export_hf = false;
  plain.runner.push(sim_trainer(2, 0, 10, 1.0, 5));
  EXPECT_EQ(plain.run(), kExitSucceeded);
  EXPECT_TRUE(plain.calls.empty());
  EXPECT_FALSE(plain.summary().hf_export.has_value());

  ExportRun failed("failed");
  SimAttempt a = sim_trainer(2, 0, 10, 1.0, 5);
  sim_fault(a, 1, 7, Exited{1});
  failed.runner.push(std::move(a));
  EXPECT_EQ(failed.run(), kExitRestartBudget);  // no restarts allowed
  EXPECT_TRUE(failed.calls.empty());
}

TEST(SupervisorExport, ASupervisorStoppedDuringTheExportFinishesItWhenStartedAgain) {
  ExportRun r("resume");
  r.runner.push(sim_trainer(2, 0, 10, 1.0, 5));
  EXPECT_EQ(r.run(), kExitSucceeded);
  // Cut the log after the `state -> succeeded` event: the supervisor died in the export.
  std::vector<std::string> lines;
  {
    std::ifstream in(r.dir / "events.jsonl");
    for (std::string l; std::getline(in, l);) {
      if (json::parse(l)["type"] == "hf_exported") break;
      lines.push_back(l);
    }
  }
  {
    std::ofstream out(r.dir / "events.jsonl", std::ios::trunc);
    for (const auto& l : lines) out << l << "\n";
  }
  ASSERT_EQ(r.summary().state, RunState::kSucceeded);
  ASSERT_FALSE(r.summary().exit_code.has_value());
  // No attempt is scripted: starting one would fail the run.
  EXPECT_EQ(r.run(), kExitSucceeded);
  EXPECT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.own_types_from("hf_exported"),
            (std::vector<std::string>{"hf_exported", "run_finished"}));
}

}  // namespace
}  // namespace grpo::supervise
