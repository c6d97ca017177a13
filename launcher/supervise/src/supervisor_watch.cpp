// Watching one attempt (docs/supervisor.md): the ranks' output and events, hang and straggler
// checks, the end time, stopping the attempt and deciding how it ended. Part of supervisor.cpp's
// class, kept apart for size.
#include "grpo/supervise/supervisor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <set>

#include "grpo/core/checkpoint_interval.h"
#include "grpo/core/overloaded.h"
#include "grpo/process/signals.h"
#include "grpo/runlog/step_aggregate.h"
#include "grpo/supervise/output_parsing.h"
#include "grpo/supervise/self_save.h"

#include "grpo/core/telemetry_events.h"
#include "supervisor_attempt.h"

namespace grpo::supervise {

using core::Overloaded;

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;
using nlohmann::json;

namespace {

// How long a peer's COMM_ERROR waits for a better root cause (docs/supervisor.md).
constexpr double kCommGraceS = 1.0;
// How often Slurm is asked about the step's nodes while an attempt is not healthy.
constexpr double kNodeCheckS = 5.0;

// The exit of a rank we were stopping is a consequence of our own signal, not a failure.
bool caused_by_us(const ExitStatus& st, const std::set<int>& sent) {
  return std::visit(
      Overloaded{[&](const Exited& e) { return e.code > 128 && sent.count(e.code - 128) > 0; },
                 [&](const Signaled& s) { return sent.count(s.signal) > 0; }},
      st);
}

}  // namespace

core::Status Supervisor::handle_output(Attempt& a, RankOutput& out) {
  auto parsed = out.event ? std::move(out.event) : parse_event_line(out.line);
  if (!parsed) {
    spdlog::debug("rank {}: {}", out.rank, out.line);
    return core::ok_status();
  }
  json e = std::move(*parsed);
  const double now = d_.clock.now();
  const std::string type = e["type"].get<std::string>();
  if (type == core::telemetry::event::kStack) {
    // An answer to our SIGUSR1 (hang attribution), not a sign of progress; kept for the
    // hang_report, not logged event by event.
    if (!a.stacks || a.stacks->reported) return core::ok_status();
    auto s = rank_stacks_from_event(out.rank, e);
    if (s.ok()) {
      a.stacks->add(std::move(s).value());
    } else {
      spdlog::warn("{}", s.error().message);
    }
    return core::ok_status();
  }
  const auto straggler = a.monitor.observe(out.rank, e, now, timings_);
  GRPO_TRY_STATUS(record_calibration(a));
  const bool folded = type == ev::kStep && a.step_ranks;
  if (folded) {
    for (auto& summary : a.step_ranks->add(out.rank, e)) {
      summary["attempt"] = a.number;
      GRPO_TRY_STATUS(record(ev::kStepRanks, std::move(summary)));
    }
  }
  if (type != core::telemetry::event::kHeartbeat &&
      !(folded && out.rank >= o_.config.step_event_ranks)) {
    json fields = e;
    if (fields.contains("time")) fields["trainer_time"] = fields["time"];
    fields.erase("schema");
    fields.erase("seq");
    fields.erase("time");
    fields.erase("type");
    fields["source"] = "trainer";
    fields["attempt"] = a.number;
    if (!fields.contains("rank")) fields["rank"] = out.rank;
    GRPO_TRY_STATUS(record(type, std::move(fields)));
    ++a.forwarded;
  }
  if (type == core::telemetry::event::kCheckpointSaved) {
    a.checkpoint_on_disk = std::max(a.checkpoint_on_disk, e.value("step", std::int64_t{-1}));
    if (a.checkpoint_requested_at) a.checkpoint_saved = true;
    spdlog::info("checkpoint of step {} saved ({})", e.value("step", 0),
                 e.value("reason", std::string("?")));
  } else if (type == core::telemetry::event::kCheckpointSkipped) {
    spdlog::warn("rank {} skipped a checkpoint: {} ({})", out.rank, e.value("path", std::string()),
                 e.value("reason", std::string()));
  } else if (type == core::telemetry::event::kFaultInjected) {
    spdlog::info("rank {}: fault injected: {}", out.rank, e.value("fault", std::string()));
  }
  if (auto f = failure_from_event(out.rank, e)) {
    spdlog::warn("rank {}: {}", out.rank, describe(*f));
    a.candidates.push_back(*f);
  }
  if (straggler) {
    const auto& s = *straggler;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "rank %d is a straggler: %.3f s of compute per step vs %.3f s (median of the "
                  "others), %d steps in a row",
                  s.rank, s.compute_s, s.others_median_s, s.steps);
    spdlog::warn("{}", buf);
    GRPO_TRY_STATUS(record(ev::kStraggler, {{"rank", s.rank},
                                            {"step", s.step},
                                            {"compute_s", s.compute_s},
                                            {"median_s", s.others_median_s},
                                            {"steps", s.steps},
                                            {"attempt", a.number},
                                            {"message", std::string(buf)}}));
  }
  if (type == ev::kOomError || type == ev::kExpertImbalance || straggler) {
    GRPO_TRY_STATUS(count_warnings());
  }
  if (!a.teardown && !a.checkpoint_requested_at && a.monitor.all_reported() &&
      (summary_.state == RunState::kLaunching || summary_.state == RunState::kUnhealthy) &&
      !a.monitor.stalled(now, timings_)) {
    GRPO_TRY_STATUS(transition(Trigger::kProgress, summary_.state == RunState::kLaunching
                                                       ? "every rank reported"
                                                       : "heartbeats are back"));
  }
  return core::ok_status();
}

core::Status Supervisor::record_calibration(const Attempt& a) {
  auto limits = calibrated_timeouts(o_.config.hang, timings_);
  if (!calibration_changed(recorded_timeouts_, limits)) return core::ok_status();
  json fields = timings_.phases().to_json();
  json lj = json::object();
  std::string text;
  for (const auto& [cls, seconds] : limits) {
    lj[std::string(to_string(cls))] = seconds;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.1f s", text.empty() ? "" : ", ",
                  std::string(to_string(cls)).c_str(), seconds);
    text += buf;
  }
  fields["limits"] = lj;
  fields["factor"] = o_.config.hang.phases.factor;
  fields["attempt"] = a.number;
  spdlog::info("hang timeouts calibrated: {}", text);
  recorded_timeouts_ = std::move(limits);
  return record(ev::kTimeoutsCalibrated, std::move(fields));
}

core::Status Supervisor::stop_attempt(Attempt& a, bool graceful) {
  if (a.teardown) return core::ok_status();
  a.teardown = true;
  a.teardown_at = d_.clock.now();
  if (graceful && o_.config.stop_grace_s > 0) {
    a.sent.insert(SIGTERM);
    if (auto st = d_.runner.signal(SIGTERM); !st.ok()) {
      spdlog::warn("cannot signal the ranks: {}", st.error().message);
    }
    return core::ok_status();
  }
  a.sent.insert(SIGKILL);
  a.sent.insert(SIGTERM);
  a.killed = true;
  a.killed_at = a.teardown_at;
  return d_.runner.kill();
}

core::Result<Supervisor::Ending> Supervisor::watch(Attempt& a) {
  while (true) {
    GRPO_TRY_STATUS(take_events(a));
    const double now = d_.clock.now();
    GRPO_TRY_STATUS(take_signals(a, now));
    GRPO_TRY_STATUS(check_step_nodes(a, now));
    GRPO_TRY_STATUS(check_disk_progress(a, now));
    if (a.exit) break;
    GRPO_TRY_STATUS(check_hangs(a, now));
    GRPO_TRY_STATUS(act_on_failures(a, now));
    GRPO_TRY_STATUS(follow_checkpoint_request(a, now));
    GRPO_TRY_STATUS(escalate_stop(a, now));
    tick(false);
  }
  return how_it_ended(a);
}

// The runner's events of one poll: output lines, rank exits, its notes, the step's end.
core::Status Supervisor::take_events(Attempt& a) {
  GRPO_TRY(std::vector<AttemptEvent> events, d_.runner.poll(o_.poll_s));
  for (auto& event : events) {
    GRPO_TRY_STATUS(std::visit(
        Overloaded{
            [&](RankOutput& out) { return handle_output(a, out); },
            [&](const RankExit& x) -> core::Status {
              const bool ours = a.teardown && caused_by_us(x.status, a.sent);
              spdlog::log(process::shell_code(x.status) == 0 || ours ? spdlog::level::debug
                                                                     : spdlog::level::warn,
                          "rank {} ended: {}{}", x.rank, process::describe(x.status),
                          x.node ? " on " + *x.node : std::string());
              if (ours) return core::ok_status();
              auto f = failure_from_exit(x.rank, x.status, o_.config.contract,
                                         a.sent.count(SIGTERM) > 0, x.oom_killed);
              if (f) {
                if (auto* n = std::get_if<RankCrash>(&*f); n && x.node && n->message.empty()) {
                  n->message = "on " + *x.node;
                }
                a.candidates.push_back(*f);
              }
              return core::ok_status();
            },
            [&](const RunnerNote& n) -> core::Status {
              spdlog::warn("{}", n.text);
              if (auto f = failure_from_note(n)) a.candidates.push_back(*f);
              return core::ok_status();
            },
            [&](const AttemptExit& x) -> core::Status {
              a.exit = x.status;
              return core::ok_status();
            },
        },
        event));
  }
  return core::ok_status();
}

// Signals sent to us: the job must yield (USR2 before the time limit, TERM, Ctrl-C); and the
// job's end time coming.
core::Status Supervisor::take_signals(Attempt& a, double now) {
  while (auto sig = d_.signals.take()) {
    spdlog::warn("received {}", process::signal_name(*sig));
    const bool again = std::any_of(a.candidates.begin(), a.candidates.end(), [](const auto& f) {
      return std::holds_alternative<Preemption>(f);
    });
    if (again && (*sig == SIGINT || *sig == SIGTERM) && !a.killed) {
      spdlog::warn("second {}: stopping the ranks now", process::signal_name(*sig));
      a.teardown = true;
      a.sent.insert(SIGKILL);
      a.sent.insert(SIGTERM);
      a.killed = true;
      a.killed_at = now;
      GRPO_TRY_STATUS(d_.runner.kill());
    }
    if (*sig == SIGUSR2 && o_.config.saves_before_end && end_time_ &&
        d_.clock.wall() < self_save_plan(*end_time_, o_.config.end_margin_s).save_by) {
      spdlog::info(
          "the trainer saves before the job's end by itself: yielding at the end "
          "time, not on USR2");
      continue;
    }
    if (!again) a.candidates.push_back(Preemption{process::signal_name(*sig)});
  }
  if (!a.exit && !a.teardown && !a.checkpoint_requested_at) {
    GRPO_TRY(auto end, check_end_time(now));
    if (end) a.candidates.push_back(*end);
  }

  return core::ok_status();
}

// A node that died is declared by Slurm only after SlurmdTimeout; meanwhile a new step waits
// for its resources ("step creation temporarily disabled") and the old one's ranks report
// COMM_ERROR. While the attempt is not healthy, or a COMM_ERROR waits for its cause, ask
// Slurm every kNodeCheckS about the step's nodes.
core::Status Supervisor::check_step_nodes(Attempt& a, double now) {
  if (d_.job.under_slurm() && !a.teardown && !a.hosts.empty() &&
      now - a.last_node_check >= kNodeCheckS &&
      (a.comm_seen_at || summary_.state == RunState::kLaunching ||
       summary_.state == RunState::kUnhealthy)) {
    a.last_node_check = now;
    if (auto bad = d_.job.unhealthy_nodes(a.hosts); bad.ok() && !bad->empty()) {
      spdlog::warn("Slurm reports node {} down or not responding", bad->front());
      a.candidates.push_back(NodeLoss{bad->front()});
    }
  }

  return core::ok_status();
}

// Trainers without heartbeats make progress by writing checkpoints.
core::Status Supervisor::check_disk_progress(Attempt& a, double now) {
  if (now - a.last_disk_check >= 1.0) {
    a.last_disk_check = now;
    const std::int64_t newest = d_.newest_checkpoint();
    if (newest > a.checkpoint_on_disk) {
      a.checkpoint_on_disk = newest;
      a.monitor.checkpoint_progress(now);
      if (!a.monitor.any_heartbeat() && !a.teardown &&
          (summary_.state == RunState::kLaunching || summary_.state == RunState::kUnhealthy)) {
        GRPO_TRY_STATUS(
            transition(Trigger::kProgress, "new checkpoint of step " + std::to_string(newest)));
      }
    }
  }

  return core::ok_status();
}

// Hangs and stalls.
core::Status Supervisor::check_hangs(Attempt& a, double now) {
  if (!a.teardown && !a.checkpoint_requested_at && a.candidates.empty()) {
    if (auto hang = a.monitor.check_hang(now, timings_)) {
      a.candidates.push_back(*hang);
      a.hang_kill = true;
      a.hang = *hang;
      if (o_.config.stack_timeout_s > 0) ask_for_stacks(a.stacks.emplace(), a.spec);
    } else if (a.monitor.stalled(now, timings_) &&
               (summary_.state == RunState::kHealthy || summary_.state == RunState::kLaunching)) {
      GRPO_TRY_STATUS(transition(Trigger::kStall, "heartbeats are late"));
    }
  }

  return core::ok_status();
}

// Act on what was found: the most telling failure decides (failure_priority).
core::Status Supervisor::act_on_failures(Attempt& a, double now) {
  if (!a.candidates.empty() && !a.teardown) {
    const Failure* best = &a.candidates.front();
    for (const auto& f : a.candidates) {
      if (failure_priority(f) > failure_priority(*best)) best = &f;
    }
    // A rank that dies is reported by its peers (COMM_ERROR) before srun reports the death
    // itself: wait up to kCommGraceS for the root cause before tearing the step down (which
    // would make every later exit look like our own kill).
    const bool comm_only = std::holds_alternative<CommFailure>(*best);
    if (comm_only && !a.comm_seen_at) a.comm_seen_at = now;
    if (comm_only && now - *a.comm_seen_at < kCommGraceS) {
      // keep polling
    } else if (a.stacks && !a.stacks->reported && !a.stacks->complete(now)) {
      // keep polling: the ranks' stacks come first (hang attribution)
    } else if (std::holds_alternative<Preemption>(*best)) {
      if (!a.checkpoint_requested_at) {
        GRPO_TRY_STATUS(transition(Trigger::kPreemption, describe(*best)));
        a.checkpoint_requested_at = now;
        a.checkpoint_at_request = a.checkpoint_on_disk;
        if (o_.config.saves_before_end) {
          // It saved before the time it was given (or is saving): nothing to ask.
          spdlog::info(
              "the trainer saves by itself before the end: waiting for a save in "
              "progress, then yielding");
        } else {
          // grpo-trainer checkpoints on SIGUSR2 and goes on; a torchrun-style trainer is
          // asked to stop with SIGTERM (its checkpoint-and-exit convention).
          const int sig = embedded() ? SIGUSR2 : SIGTERM;
          spdlog::info("asking the trainer for a checkpoint ({}) before yielding",
                       process::signal_name(sig));
          a.sent.insert(sig);
          if (auto st = d_.runner.signal(sig); !st.ok()) {
            spdlog::warn("cannot signal the ranks: {}", st.error().message);
          }
        }
      }
    } else {
      if (summary_.state != RunState::kStopping) {
        GRPO_TRY_STATUS(transition(Trigger::kFailure, describe(*best)));
      }
      // grpo-trainer's state after a failure is useless (the group is broken; checkpoints are
      // atomic; its telemetry is flushed line by line): kill at once. Another trainer gets
      // SIGTERM and --stop-grace to exit by itself; a hung rank cannot act on SIGTERM.
      if (a.stacks && !a.stacks->reported && a.hang) {
        GRPO_TRY_STATUS(record_hang_report(*a.stacks, a.number, a.spec, *a.hang));
      }
      GRPO_TRY_STATUS(stop_attempt(a, !embedded() && !a.hang_kill));
    }
  }
  return core::ok_status();
}

// After asking for a checkpoint before yielding: stop once it is written, or when it is late.
core::Status Supervisor::follow_checkpoint_request(Attempt& a, double now) {
  if (a.checkpoint_requested_at && !a.teardown) {
    const double s = timings_.longest_step().value_or(10.0);
    const double limit = o_.config.checkpoint_timeout_s > 0
                             ? o_.config.checkpoint_timeout_s
                             : std::max(60.0, 3.0 * s + 3.0 * timings_.longest_checkpoint());
    if (a.checkpoint_saved || a.checkpoint_on_disk > a.checkpoint_at_request) {
      spdlog::info("checkpoint written; stopping the ranks");
      // A trainer that tears down what it started (verl's Ray) gets SIGTERM and the grace.
      GRPO_TRY_STATUS(stop_attempt(a, o_.config.saves_before_end));
    } else if (o_.config.saves_before_end) {
      // It saves by itself (self_save.h): a save in progress, or a late one, is waited for.
      std::optional<SelfSavePlan> plan;
      if (end_time_) plan = self_save_plan(*end_time_, o_.config.end_margin_s);
      switch (self_save_wait(plan, d_.clock.wall(),
                             a.monitor.phase_class(0) == PhaseClass::kCheckpoint,
                             a.checkpoint_on_disk < a.monitor.max_step())) {
        case SelfSaveWait::kStop:
          spdlog::info("no save in progress; stopping the trainer (newest checkpoint: step {})",
                       a.checkpoint_on_disk);
          GRPO_TRY_STATUS(stop_attempt(a, true));
          break;
        case SelfSaveWait::kPastDeadline:
          spdlog::warn("the save in progress did not land before the deadline; stopping");
          GRPO_TRY_STATUS(stop_attempt(a, true));
          break;
        case SelfSaveWait::kWait:
          if (!plan && now - *a.checkpoint_requested_at > limit) {
            spdlog::warn("no checkpoint within {:.0f} s; stopping the trainer", limit);
            GRPO_TRY_STATUS(stop_attempt(a, true));
          }
          break;
      }
    } else if (now - *a.checkpoint_requested_at > limit) {
      spdlog::warn("no checkpoint within {:.0f} s of the request; stopping the ranks", limit);
      GRPO_TRY_STATUS(stop_attempt(a, false));
    }
  }
  return core::ok_status();
}

// SIGTERM's grace over: SIGKILL, and again while the ranks are not gone.
core::Status Supervisor::escalate_stop(Attempt& a, double now) {
  if (a.teardown && !a.killed && now - a.teardown_at >= o_.config.stop_grace_s) {
    spdlog::info("ranks still running {:.1f} s after SIGTERM: killing them", now - a.teardown_at);
    a.killed = true;
    a.killed_at = now;
    a.sent.insert(SIGKILL);
    GRPO_TRY_STATUS(d_.runner.kill());
  }
  if (a.killed && now - a.killed_at > 30.0) {
    spdlog::warn("ranks still not gone {:.0f} s after SIGKILL; killing again", now - a.killed_at);
    a.killed_at = now;
    GRPO_TRY_STATUS(d_.runner.kill());
  }
  return core::ok_status();
}

Supervisor::Ending Supervisor::how_it_ended(Attempt& a) {
  // Finished: every rank exited 0 by itself, or (grpo-trainer) said `done` even while we were
  // asking it to yield. A torchrun-style trainer that exits 0 after our SIGTERM only stopped.
  const bool success = process::shell_code(*a.exit) == 0;
  bool all_done = true;
  std::string not_done;
  for (int r = 0; r < a.spec.world_size(); ++r) {
    if (a.monitor.rank_done(r)) continue;
    all_done = false;
    not_done += (not_done.empty() ? "" : ",") + std::to_string(r);
  }
  const bool stopped_by_us = a.sent.count(SIGTERM) > 0 || a.sent.count(SIGKILL) > 0;
  // grpo-trainer's work is done only when every rank said so: srun can exit 0 for a step whose
  // tasks never ran (a launch failure on a node that is going down).
  if (success && (all_done || (!stopped_by_us && !embedded()))) {
    // ... and only when the steps say so too: no false success.
    if (auto short_of = unfinished(a)) {
      a.candidates.push_back(*short_of);
      return Ending::kFailed;
    }
    return Ending::kCompleted;
  }
  if (success && !stopped_by_us) {
    a.candidates.push_back(
        Incomplete{a.monitor.max_step(), o_.config.total_steps, a.resume_step,
                   "the step ended with exit 0 but rank(s) " + not_done + " never reported done"});
  }
  return Ending::kFailed;
}

std::optional<Failure> Supervisor::unfinished(const Attempt& a) const {
  // The steps are known from grpo-trainer's telemetry, or from any trainer that reports steps;
  // a trainer that reports none (an external one) is taken at its word.
  const std::int64_t reached = a.monitor.max_step();
  if (!embedded() && reached <= 0) {
    if (!o_.config.reports_steps) return std::nullopt;
    return Incomplete{reached, o_.config.total_steps, a.resume_step,
                      "the trainer exited 0 without a training step"};
  }
  const std::int64_t total = o_.config.total_steps;
  if (total > 0) {
    if (reached >= total) return std::nullopt;
    return Incomplete{
        reached, total, a.resume_step,
        "the trainer exited 0 at step " + std::to_string(reached) + " of " + std::to_string(total)};
  }
  if (a.resume_step >= 0 && reached <= a.resume_step) {
    return Incomplete{reached, total, a.resume_step,
                      "the attempt resumed from step " + std::to_string(a.resume_step) +
                          " and ended without a new step"};
  }
  return std::nullopt;
}

}  // namespace grpo::supervise
