// grpo-launch status / events / report: views of a run directory's event log
// (docs/run-visibility.md, docs/events.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/core/text.h"
#include "grpo/io/files.h"
#include "grpo/report/report.h"
#include "grpo/runlog/event_log.h"
#include "grpo/runlog/run_view.h"
#include "grpo/slurm/slurm_job.h"
#include "grpo/supervise/event_log_file.h"

namespace grpo::cli {
namespace fs = std::filesystem;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool is_run_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / core::run_dir::kEvents, ec) ||
         fs::is_regular_file(p / core::run_dir::kRunSpec, ec);
}

// A run directory, or a Slurm job id: the job's --output lives in its run directory (libslurm),
// and submit records the id in <run_dir>/job.json (searched under ./runs).
core::Result<fs::path> resolve_run(const std::string& target) {
  std::error_code ec;
  if (fs::is_directory(target, ec)) {
    if (!is_run_dir(target)) {
      return core::make_error(core::ErrorKind::kNotFound,
                              target + " is not a run directory (no events.jsonl or run.json)");
    }
    return fs::path(target);
  }
  auto id = slurm::parse_job_id(target.c_str(), "job id");
  if (!id.ok()) {
    return core::make_error(core::ErrorKind::kNotFound,
                            "no run directory or Slurm job id '" + target + "'");
  }
  if (auto lib = slurm::LibSlurm::open(); lib.ok()) {
    if (auto job = lib.value()->load_job(id.value()); job.ok()) {
      for (const auto& p : {fs::path(job->std_out).parent_path(), fs::path(job->work_dir)}) {
        if (!p.empty() && is_run_dir(p)) return p;
      }
    }
  }
  const fs::path runs = "runs";
  if (fs::is_directory(runs, ec)) {
    for (const auto& entry : fs::directory_iterator(runs, ec)) {
      auto text = io::read_file(entry.path() / core::run_dir::kJob, 1u << 20);
      if (!text.ok()) continue;
      const auto j = nlohmann::json::parse(text.value(), nullptr, false);
      if (j.is_object() && j.value("job_id", 0u) == id.value()) return entry.path();
    }
  }
  return core::make_error(core::ErrorKind::kNotFound,
                          "cannot find the run directory of job " + target +
                              " (not in Slurm's records, not under ./runs)");
}

core::Result<supervise::LogContents> load_events(const fs::path& run) {
  const fs::path log = run / core::run_dir::kEvents;
  std::error_code ec;
  if (!fs::exists(log, ec)) return supervise::LogContents{};  // submitted, not started yet
  return supervise::read_event_log(log);
}

std::string clock_time(double t) {
  const auto secs = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((t - static_cast<double>(secs)) * 1000));
  return buf;
}

std::string human_event(const nlohmann::json& e) {
  std::string line = clock_time(e.value("time", 0.0)) + "  " + e.value("type", std::string("?"));
  for (const auto& [k, v] : e.items()) {
    if (k == "schema" || k == "seq" || k == "time" || k == "type") continue;
    line += "  " + k + "=" + (v.is_string() ? v.get<std::string>() : core::json_text(v));
  }
  // Ranks and programs supply these values: a terminal must not act on them (docs/security.md).
  return core::escape_controls(line);
}

bool wanted(const nlohmann::json& e, const std::vector<std::string>& types) {
  if (types.empty()) return true;
  const std::string t = e.value("type", std::string());
  for (const auto& w : types) {
    if (w == t) return true;
  }
  return false;
}

// The run directories directly under `dir`, by name; empty when there are none.
std::vector<fs::path> runs_under(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && is_run_dir(entry.path())) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `grpo-launch status DIR` where DIR holds runs: one line (or JSON object) per run.
int status_of_runs(const std::vector<fs::path>& runs, const std::string& format) {
  const double now = now_seconds();
  std::vector<supervise::RunListEntry> entries;
  for (const fs::path& run : runs) {
    supervise::RunListEntry e{run.filename().string(), std::nullopt, {}, run.string()};
    auto log = load_events(run);
    auto summary = log.ok() ? supervise::replay(log->events)
                            : core::Result<supervise::RunSummary>(log.error());
    if (summary.ok()) {
      e.summary = summary.value();
    } else {
      e.error = summary.error().message;
    }
    entries.push_back(std::move(e));
  }
  if (format == "json") {
    std::cout << core::json_text(supervise::status_list_json(entries, now), 2) << "\n";
  } else {
    std::cout << core::escape_controls(supervise::render_status_list(entries, now), true);
  }
  return kExitOk;
}

}  // namespace

int cmd_status(const GlobalArgs&, const StatusArgs& args) {
  std::error_code ec;
  if (fs::is_directory(args.target, ec) && !is_run_dir(args.target)) {
    if (auto runs = runs_under(args.target); !runs.empty()) {
      return status_of_runs(runs, args.format);
    }
  }
  auto run = resolve_run(args.target);
  if (!run.ok()) return fail(run.error(), kExitInput);
  auto log = load_events(run.value());
  if (!log.ok()) return fail(log.error(), kExitInput);
  auto summary = supervise::replay(log->events);
  if (!summary.ok()) return fail(summary.error(), kExitInput);
  const auto& s = summary.value();
  const double now = now_seconds();
  if (args.format == "json") {
    std::cout << core::json_text(supervise::status_json(s, run->string(), log->torn, now), 2)
              << "\n";
    return kExitOk;
  }
  // The summary quotes rank-supplied text (failure messages, notes): escaped like events.
  if (!s.started)
    std::cout << "run        " << core::escape_controls(run->string())
              << "\nstate      not started yet (no events)\n";
  else
    std::cout << core::escape_controls(supervise::render_status(s, run->string(), now), true);
  if (log->torn)
    std::cout << "note       the newest event line is incomplete (the writer was interrupted)\n";
  return kExitOk;
}

int cmd_events(const GlobalArgs&, const EventsArgs& args) {
  auto run = resolve_run(args.target);
  if (!run.ok()) return fail(run.error(), kExitInput);
  std::vector<std::string> types;
  for (const auto& t : args.types) {
    for (const std::string_view one : core::split(t, ',')) {
      if (!one.empty()) types.emplace_back(one);
    }
  }
  const fs::path log = run.value() / core::run_dir::kEvents;
  std::size_t offset = 0;
  bool finished = false;
  auto emit = [&](const nlohmann::json& e) {
    if (e.value("type", std::string()) == supervise::ev::kRunFinished) finished = true;
    if (!wanted(e, types)) return;
    std::cout << (args.format == "json" ? core::json_text(e) : human_event(e)) << "\n";
  };
  while (true) {
    std::error_code ec;
    if (fs::exists(log, ec)) {
      auto text = io::read_file(log, std::size_t{1} << 34);
      if (!text.ok()) return fail(text.error(), kExitInput);
      const std::string& all = text.value();
      std::uint32_t line = 0;
      for (std::size_t pos = 0; pos < all.size();) {
        const auto nl = all.find('\n', pos);
        if (nl == std::string::npos) break;  // a line still being written
        ++line;
        if (pos >= offset && nl > pos) {
          const auto e = nlohmann::json::parse(all.substr(pos, nl - pos), nullptr, false);
          if (e.is_discarded()) {
            return fail(
                core::make_error(core::ErrorKind::kParse, "not JSON", {log.string(), line, 0}),
                kExitInput);
          }
          emit(e);
        }
        pos = nl + 1;
        if (pos > offset) offset = pos;
      }
    } else if (!args.follow) {
      return kExitOk;  // no events yet
    }
    std::cout.flush();
    if (!args.follow || finished) return kExitOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// report RUN1 RUN2 ...: the runs overlaid in one page.
int compare_runs(const ReportArgs& args) {
  if (args.targets.size() > report::kMaxComparedRuns) {
    print_error("report compares at most " + std::to_string(report::kMaxComparedRuns) +
                " runs, not " + std::to_string(args.targets.size()));
    return kExitUsage;
  }
  std::vector<report::RunEvents> runs;
  for (const auto& target : args.targets) {
    auto run = resolve_run(target);
    if (!run.ok()) return fail(run.error(), kExitInput);
    auto log = load_events(run.value());
    if (!log.ok()) return fail(log.error(), kExitInput);
    runs.push_back({fs::absolute(run.value()).lexically_normal().string(), log->events});
  }
  report::ReportOptions options;
  options.title = std::to_string(runs.size()) + " runs compared";
  options.generated = now_seconds();
  const auto r = report::render_comparison(runs, options);
  const fs::path out =
      args.output.empty() ? fs::path("compare-report.html") : fs::path(args.output);
  if (auto st = io::write_file_atomic(out, r.html, 0644); !st.ok())
    return fail(st.error(), kExitCantCreate);
  int with_data = 0;
  for (const auto& c : r.charts) with_data += c.points > 0;
  std::cout << out.string() << ": " << r.charts.size() << " charts (" << with_data
            << " with data) comparing " << runs.size() << " runs\n";
  return kExitOk;
}

int cmd_report(const GlobalArgs&, const ReportArgs& args) {
  if (args.targets.size() != 1) return compare_runs(args);
  auto run = resolve_run(args.targets.front());
  if (!run.ok()) return fail(run.error(), kExitInput);
  auto log = load_events(run.value());
  if (!log.ok()) return fail(log.error(), kExitInput);
  report::ReportOptions options;
  options.title = fs::absolute(run.value()).lexically_normal().string();
  options.generated = now_seconds();
  const auto r = report::render_report(log->events, options);
  const fs::path out = args.output.empty() ? run.value() / "report.html" : fs::path(args.output);
  if (auto st = io::write_file_atomic(out, r.html, 0644); !st.ok())
    return fail(st.error(), kExitCantCreate);
  int with_data = 0;
  for (const auto& c : r.charts) with_data += c.points > 0;
  std::cout << out.string() << ": " << r.charts.size() << " charts (" << with_data
            << " with data) from " << log->events.size() << " events\n";
  return kExitOk;
}

}  // namespace grpo::cli
