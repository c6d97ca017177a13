// `grpo-launch status --format json`: the run summary as the documented JSON object
// (docs/run-visibility.md, schemas grpo-launch/status/v1 and grpo-launch/status-list/v1).
#include "grpo/runlog/run_view.h"

namespace grpo::supervise {
using nlohmann::json;

namespace {

json attempts_json(const RunSummary& s) {
  json attempts = json::array();
  for (const auto& a : s.history.attempts) {
    attempts.push_back({{"attempt", a.attempt},
                        {"failure", a.failure_class ? json(*a.failure_class) : json()},
                        {"spent_budget", a.spent_budget},
                        {"checkpoint_step_at_start", a.checkpoint_step_at_start},
                        {"checkpoint_step_at_end", a.checkpoint_step_at_end}});
    if (auto h = s.hang_phases.find(a.attempt); h != s.hang_phases.end()) {
      attempts.back()["hang_phase"] = h->second;
    }
  }
  return attempts;
}

}  // namespace

json status_json(const RunSummary& s, const std::string& run_dir, bool torn, double now) {
  const double end = run_end(s, now);
  json j = {{"schema", "grpo-launch/status/v1"},
            {"run_dir", run_dir},
            {"state", std::string(to_string(s.state))},
            {"started", s.started},
            {"exit_code", s.exit_code ? json(*s.exit_code) : json()},
            {"step", s.last_step},
            {"total_steps", s.total_steps},
            {"attempt", s.attempt},
            {"restarts", s.restarts},
            {"requeues", s.requeues},
            {"failures", json(s.failures)},
            {"oom_events", s.oom_events},
            {"expert_imbalance_events", s.expert_imbalance_events},
            {"straggler_events", s.straggler_events},
            {"latest_checkpoint_step", s.latest_checkpoint_step},
            {"lost_s", s.goodput.lost_at(end)},
            {"lost_by_cause", s.goodput.to_json(end)},
            {"effective_ratio", effective_ratio(s, now)},
            {"torn_log", torn}};
  if (!s.layout.empty()) j["layout"] = s.layout;
  if (s.reward) j["reward"] = *s.reward;
  if (s.val_reward) j["val_reward"] = *s.val_reward;
  if (s.tokens_per_s) j["tokens_per_s"] = *s.tokens_per_s;
  if (const auto& h = s.hf_export) {
    j["hf_export"] = {{"ok", h->ok}, {"path", h->path}, {"seconds", h->seconds}};
    if (h->ok) j["hf_export"]["step"] = h->step;
    if (!h->ok) j["hf_export"]["message"] = h->message;
  }
  j["attempts"] = attempts_json(s);
  if (!s.phase_timeouts.empty()) j["phase_timeouts"] = s.phase_timeouts;
  if (s.hang_report.is_object()) {
    // The newest hang attribution (docs/events.md, hang_report), without the envelope.
    json h = s.hang_report;
    for (const char* k : {"schema", "seq", "time", "type"}) h.erase(k);
    j["hang_report"] = h;
  }
  return j;
}

json status_list_json(const std::vector<RunListEntry>& runs, double now) {
  json list = json::array();
  for (const RunListEntry& e : runs) {
    json j = {{"run_dir", e.run_dir}};
    if (e.summary) {
      const RunSummary& s = *e.summary;
      j["state"] = s.started ? std::string(to_string(s.state)) : "not started";
      j["step"] = s.last_step;
      j["total_steps"] = s.total_steps;
      j["effective_ratio"] = effective_ratio(s, now);
      if (s.reward) j["reward"] = *s.reward;
      if (!s.layout.empty()) j["layout"] = s.layout;
    } else {
      j["state"] = "unreadable";
      j["error"] = e.error;
    }
    list.push_back(std::move(j));
  }
  return json{{"schema", "grpo-launch/status-list/v1"}, {"runs", list}};
}

}  // namespace grpo::supervise
