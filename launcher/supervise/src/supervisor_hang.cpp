// Hang attribution (docs/supervisor.md, "Hang attribution"): the supervisor's side of
// hang_report.h. Part of supervisor.cpp's class, kept apart for size.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>

#include "grpo/core/run_dir.h"
#include "grpo/io/files.h"
#include "grpo/process/process_runner.h"
#include "grpo/supervise/child_process.h"
#include "grpo/supervise/supervisor.h"

namespace grpo::supervise {

using nlohmann::json;

void Supervisor::ask_for_stacks(StackRequest& req, const AttemptSpec& spec) {
  const double now = d_.clock.now();
  req.world_size = spec.world_size();
  req.asked_at = now;
  req.deadline = now + o_.config.stack_timeout_s;
  if (embedded()) {
    // grpo-trainer answers SIGUSR1 with a `stack` event (srun forwards the signal to its tasks).
    req.method = "signal";
    spdlog::info("hang: asking every rank for its stack (SIGUSR1, up to {:.1f} s)",
                 o_.config.stack_timeout_s);
    if (auto st = d_.runner.signal(SIGUSR1); !st.ok()) {
      req.method = "none";
      req.note = "cannot signal the ranks: " + st.error().message;
      return;
    }
    // A stopped rank (SIGSTOP) cannot answer until continued: do not wait for it.
    for (const auto& [rank, pid] : d_.runner.rank_pids()) {
      if (process_stopped(pid)) req.stopped.push_back(rank);
    }
    if (!req.stopped.empty()) {
      spdlog::info("hang: {} rank(s) stopped (state T), first rank {}: not waiting for them",
                   req.stopped.size(), req.stopped.front());
    }
    return;
  }
  // A --trainer-cmd program does not answer SIGUSR1 (its default action ends it): read its
  // ranks' stacks with eu-stack, on this machine only.
  const auto pids = d_.runner.rank_pids();
  const char* path = std::getenv("PATH");
  const auto eu_stack =
      process::find_executable("eu-stack", path != nullptr ? path : process::kDefaultPath);
  if (pids.empty()) {
    req.method = "none";
    req.note = "the ranks of a --trainer-cmd program are not local processes (no stacks under " +
               std::string(d_.runner.kind()) + ")";
    return;
  }
  if (!eu_stack) {
    req.method = "none";
    req.note = "eu-stack (elfutils) is not installed";
    return;
  }
  req.method = "eu-stack";
  process::PosixProcessRunner runner;
  for (const auto& [rank, pid] : pids) {
    const double left = req.deadline - d_.clock.now();
    if (left <= 0) break;
    process::CommandSpec c;
    c.argv = {*eu_stack, "-s", "-m", "-p", std::to_string(pid)};
    c.timeout = std::chrono::milliseconds(static_cast<long>(left * 1000));
    c.kill_grace = std::chrono::milliseconds(200);
    auto done = runner.run(c);
    if (!done.ok() || done->timed_out || done->out.empty()) {
      spdlog::warn("eu-stack -p {} (rank {}): {}", pid, rank,
                   !done.ok()        ? done.error().message
                   : done->timed_out ? std::string("timed out")
                                     : done->err);
      continue;
    }
    RankStacks s = parse_eu_stack(rank, done->out);
    if (!s.threads.empty()) req.add(std::move(s));
  }
}

core::Status Supervisor::record_hang_report(StackRequest& req, int attempt, const AttemptSpec& spec,
                                            const Hang& hang) {
  req.reported = true;
  const HangReport report = group_stacks(req.world_size, req.received, req.stopped);
  json fields = hang_report_fields(report);
  fields["attempt"] = attempt;
  fields["method"] = req.method;
  if (!req.note.empty()) {
    fields["summary"] = "no stacks: " + req.note;
    fields["note"] = req.note;
  }
  fields["phase"] = hang.phase;
  fields["trainer_phase"] = hang.trainer_phase;
  fields["silent_ranks"] = hang.ranks;
  fields["waited_s"] = d_.clock.now() - req.asked_at;
  if (!req.received.empty()) {
    const auto file = spec.log_dir / core::run_dir::kStacks;
    auto st = make_log_dir(spec.log_dir);
    if (st.ok()) st = io::write_file_atomic(file, format_stacks(req.received), 0600);
    if (st.ok()) {
      std::error_code ec;
      fields["stacks_file"] = std::filesystem::relative(file, o_.run_dir, ec).string();
    } else {
      spdlog::warn("cannot write {}: {}", file.string(), st.error().message);
    }
  }
  spdlog::warn("hang report: {}", fields["summary"].get<std::string>());
  return record(ev::kHangReport, std::move(fields));
}

}  // namespace grpo::supervise
