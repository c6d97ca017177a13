#include "grpo/runlog/run_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace grpo::supervise {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string rate(double v) {
  if (v >= 1e6) return fixed(v / 1e6, 1) + "M";
  if (v >= 1e3) return fixed(v / 1e3, 1) + "k";
  return fixed(v, 0);
}

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) return "?";
  const auto total = static_cast<long long>(std::llround(seconds));
  const long long h = total / 3600, m = (total % 3600) / 60, sec = total % 60;
  char buf[64];
  if (h > 0) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", h, m);
  } else if (m > 0) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", m, sec);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", sec);
  }
  return buf;
}

double run_end(const RunSummary& s, double now) {
  return s.exit_code ? s.last_time : std::max(now, s.last_time);
}

std::string lost_by_cause(const RunSummary& s, double now) {
  const double end = run_end(s, now);
  const Goodput& g = s.goodput;
  return "detection " + format_duration(g.detection_s) + ", restart " +
         format_duration(g.restart_at(end)) + ", recomputed " + format_duration(g.recomputed_s) +
         ", checkpoints " + format_duration(g.checkpoint_s) + ", requeue " +
         format_duration(g.requeue_at(end));
}

double effective_ratio(const RunSummary& s, double now) {
  const double end = run_end(s, now);
  const double wall = end - s.first_time;
  if (wall <= 0) return 1.0;
  return std::clamp((wall - s.goodput.lost_at(end)) / wall, 0.0, 1.0);
}

std::string progress_line(const RunSummary& s, double now) {
  std::string line = "step " + std::to_string(s.last_step);
  if (s.total_steps > 0) line += "/" + std::to_string(s.total_steps);
  if (s.reward) line += " | reward " + fixed(*s.reward, 3);
  if (s.val_reward) line += " | val " + fixed(*s.val_reward, 3);
  if (s.tokens_per_s) line += " | " + rate(*s.tokens_per_s) + " tok/s";
  if (s.total_steps > 0 && s.recent_step_s > 0 && s.last_step < s.total_steps) {
    line += " | ETA " +
            format_duration(static_cast<double>(s.total_steps - s.last_step) * s.recent_step_s);
  }
  line += " | " + std::string(to_string(s.state));
  if (s.restarts > 0) line += " | restarts " + std::to_string(s.restarts);
  if (!s.last_notable.empty()) {
    std::string note = s.last_notable;
    if (note.size() > 60) note = note.substr(0, 57) + "...";
    line += " | " + note;
  }
  (void)now;
  return line;
}

std::string render_status(const RunSummary& s, const std::string& run_dir, double now) {
  std::string out;
  out += "run        " + run_dir + "\n";
  if (!s.model.empty() || !s.profile.empty())
    out += "model      " + s.model + " on " + s.profile + "\n";
  if (s.slurm_job_id) out += "slurm job  " + *s.slurm_job_id + "\n";
  out += "state      " + std::string(to_string(s.state));
  if (s.exit_code) out += " (exit " + std::to_string(*s.exit_code) + ")";
  out += "\n";
  out += "progress   step " + std::to_string(s.last_step);
  if (s.total_steps > 0) {
    out += " of " + std::to_string(s.total_steps) + " (" +
           fixed(100.0 * static_cast<double>(s.last_step) / static_cast<double>(s.total_steps), 0) +
           "%)";
  }
  out += "\n";
  if (s.reward || s.val_reward) {
    out += "reward     " + (s.reward ? fixed(*s.reward, 3) : std::string("-")) + " (validation " +
           (s.val_reward ? fixed(*s.val_reward, 3) : std::string("-")) + ")\n";
  }
  if (s.tokens_per_s) out += "throughput " + rate(*s.tokens_per_s) + " tokens/s\n";
  if (!s.layout.empty()) out += "layout     " + s.layout + "\n";
  out += "attempts   " + std::to_string(s.attempt) + " (supervisor starts " +
         std::to_string(s.supervisor_starts) + ", restarts " + std::to_string(s.restarts) +
         ", requeues " + std::to_string(s.requeues) + ")\n";
  if (!s.failures.empty()) {
    out += "failures  ";
    for (const auto& [cls, n] : s.failures) out += " " + cls + " " + std::to_string(n);
    out += "\n";
  }
  for (const auto& a : s.history.attempts) {
    if (!a.failure_class) continue;
    const auto hang = s.hang_phases.find(a.attempt);
    const std::string in =
        hang != s.hang_phases.end() && !hang->second.empty() ? " in " + hang->second : "";
    out += "  attempt " + std::to_string(a.attempt) + ": " + *a.failure_class + in +
           (a.spent_budget ? " (restart spent budget)" : "") + ", checkpoint " +
           std::to_string(a.checkpoint_step_at_start) + " -> " +
           std::to_string(a.checkpoint_step_at_end) + "\n";
  }
  out += "events     OOM " + std::to_string(s.oom_events) + ", EXPERT_IMBALANCE " +
         std::to_string(s.expert_imbalance_events) + ", stragglers " +
         std::to_string(s.straggler_events) + "\n";
  if (!s.phase_timeouts.empty()) {
    out += "timeouts  ";
    std::string sep = " ";
    for (const auto& [cls, seconds] : s.phase_timeouts) {
      out += sep + cls + " " + fixed(seconds, 1) + " s";
      sep = ", ";
    }
    out += " (calibrated)\n";
  }
  if (s.hang_report.is_object()) {
    const auto& h = s.hang_report;
    const std::string phase = h.value("phase", std::string());
    out += "hang       attempt " + std::to_string(h.value("attempt", 0)) +
           (phase.empty() ? "" : " in " + phase) + ": " + h.value("summary", std::string()) + "\n";
    if (h.contains("stacks_file") && h["stacks_file"].is_string()) {
      out += "           every rank's stack: " + h["stacks_file"].get<std::string>() + "\n";
    }
  }
  out += "checkpoint " +
         (s.latest_checkpoint_step >= 0 ? "step " + std::to_string(s.latest_checkpoint_step)
                                        : std::string("none yet")) +
         "\n";
  if (const auto& h = s.hf_export) {
    out +=
        "hf export  " +
        (h->ok ? h->path + " (step " + std::to_string(h->step) + ", " + fixed(h->seconds, 1) + " s)"
               : "failed: " + h->message) +
        "\n";
  }
  if (!s.excluded.empty()) {
    out += "excluded  ";
    for (const auto& n : s.excluded) out += " " + n;
    out += "\n";
  }
  const double end = run_end(s, now);
  out += "wall time  " + format_duration(end - s.first_time) + ", lost " +
         format_duration(s.goodput.lost_at(end)) + ", effective " +
         fixed(100.0 * effective_ratio(s, now), 1) + "%\n";
  out += "lost to    " + lost_by_cause(s, now) + "\n";
  if (!s.last_notable.empty()) out += "last       " + s.last_notable + "\n";
  return out;
}

std::string render_prometheus(const RunSummary& s, const std::string& run) {
  const std::string l = "{run=\"" + label_value(run) + "\"}";
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, double value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + l + " " + (std::isfinite(value) ? fixed(value, 6) : std::string("NaN")) + "\n";
  };
  metric("grpo_step", "gauge", "Newest completed training step.", static_cast<double>(s.last_step));
  metric("grpo_total_steps", "gauge", "Planned training steps.",
         static_cast<double>(s.total_steps));
  metric("grpo_reward", "gauge", "Mean reward of the newest step.", s.reward.value_or(NAN));
  metric("grpo_val_reward", "gauge", "Newest validation reward.", s.val_reward.value_or(NAN));
  metric("grpo_tokens_per_second", "gauge", "Tokens per second of the newest step.",
         s.tokens_per_s.value_or(NAN));
  metric("grpo_attempt", "gauge", "Number of the current attempt.", s.attempt);
  metric("grpo_restarts_total", "counter", "Restarts decided by the supervisor.", s.restarts);
  metric("grpo_requeues_total", "counter", "Requeues decided by the supervisor.", s.requeues);
  metric("grpo_oom_events_total", "counter", "OOM_ERROR events.", s.oom_events);
  metric("grpo_expert_imbalance_events_total", "counter", "EXPERT_IMBALANCE events.",
         s.expert_imbalance_events);
  metric("grpo_straggler_events_total", "counter", "Straggler events.", s.straggler_events);
  int failures = 0;
  for (const auto& [cls, n] : s.failures) failures += n;
  metric("grpo_failures_total", "counter", "Failures detected.", failures);
  metric("grpo_latest_checkpoint_step", "gauge", "Newest checkpoint step (-1: none).",
         static_cast<double>(s.latest_checkpoint_step));
  metric("grpo_lost_seconds_total", "counter",
         "Wall time lost (faults, restarts, recomputed steps, checkpoints, requeues).",
         s.goodput.lost_at(s.last_time));
  metric("grpo_effective_ratio", "gauge", "Productive time / wall time.",
         effective_ratio(s, s.last_time));
  out +=
      "# HELP grpo_lost_cause_seconds_total Wall time lost, by cause.\n"
      "# TYPE grpo_lost_cause_seconds_total counter\n";
  const nlohmann::json causes = s.goodput.to_json(s.last_time);
  for (const auto& [cause, seconds] : causes.items()) {
    out += "grpo_lost_cause_seconds_total{run=\"" + label_value(run) + "\",cause=\"" +
           cause.substr(0, cause.size() - 2) + "\"} " + fixed(seconds.get<double>(), 6) + "\n";
  }
  out += "# HELP grpo_state Run state (1 for the current one).\n# TYPE grpo_state gauge\n";
  for (auto st :
       {RunState::kLaunching, RunState::kHealthy, RunState::kUnhealthy, RunState::kStopping,
        RunState::kRestarting, RunState::kSucceeded, RunState::kFailed, RunState::kRequeued}) {
    out += "grpo_state{run=\"" + label_value(run) + "\",state=\"" + std::string(to_string(st)) +
           "\"} " + (st == s.state ? "1" : "0") + "\n";
  }
  return out;
}

std::string render_status_list(const std::vector<RunListEntry>& runs, double now) {
  std::string out;
  auto row = [&out](const std::string& name, const std::string& state, const std::string& step,
                    const std::string& reward, const std::string& effective,
                    const std::string& layout) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%-40s %-11s %-11s %-7s %-9s %s\n", name.c_str(), state.c_str(),
                  step.c_str(), reward.c_str(), effective.c_str(), layout.c_str());
    out += buf;
  };
  row("RUN", "STATE", "STEP", "REWARD", "EFFECTIVE", "LAYOUT");
  for (const RunListEntry& r : runs) {
    if (!r.summary) {
      row(r.name, "unreadable", "-", "-", "-", "-");
      continue;
    }
    const RunSummary& s = *r.summary;
    row(r.name, s.started ? std::string(to_string(s.state)) : "not started",
        std::to_string(s.last_step) + "/" + std::to_string(s.total_steps),
        s.reward ? fixed(*s.reward, 3) : "-", fixed(100.0 * effective_ratio(s, now), 1) + "%",
        s.layout.empty() ? "-" : s.layout);
  }
  return out;
}

}  // namespace grpo::supervise
