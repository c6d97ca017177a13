#include "grpo/runlog/event_log.h"

#include "grpo/core/json_text.h"
#include "grpo/core/overloaded.h"
#include "grpo/core/telemetry_events.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace grpo::supervise {
namespace {

using core::ErrorKind;
using core::make_error;
using nlohmann::json;

core::Error bad(const json& e, const std::string& what) {
  return make_error(
      ErrorKind::kParse,
      "event " + (e.contains("seq") ? core::json_text(e["seq"]) : std::string("?")) + ": " + what);
}

template <typename T>
core::Result<T> field(const json& e, const char* name) {
  if (!e.contains(name)) return bad(e, std::string("missing '") + name + "'");
  try {
    return e.at(name).get<T>();
  } catch (const json::exception&) {
    return bad(e, std::string("'") + name + "' has the wrong type");
  }
}

template <typename T>
T field_or(const json& e, const char* name, T fallback) {
  if (!e.contains(name)) return fallback;
  try {
    return e.at(name).get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

AttemptRecord* current(RunSummary& s) {
  return s.history.attempts.empty() ? nullptr : &s.history.attempts.back();
}

// The reducer's actions (state = fold(events)): one per event type, or per pair of types that
// share their fields. Each folds one event of its type into the summary.

core::Status on_run_started(RunSummary& s, const json& e) {
  s.started = true;
  ++s.supervisor_starts;
  // A (re)started supervisor begins its first attempt: launching (docs/supervisor.md).
  s.state = RunState::kLaunching;
  s.total_steps = field_or<std::int64_t>(e, "total_steps", s.total_steps);
  s.profile = field_or<std::string>(e, "profile", s.profile);
  s.model = field_or<std::string>(e, "model", s.model);
  if (e.contains("slurm_job_id") && !e["slurm_job_id"].is_null()) {
    s.slurm_job_id = field_or<std::string>(e, "slurm_job_id", "");
  }
  s.exit_code.reset();
  return core::ok_status();
}

core::Status on_state(RunSummary& s, const json& e) {
  GRPO_TRY(const std::string to, field<std::string>(e, "to"));
  GRPO_TRY(s.state, parse_run_state(to));
  return core::ok_status();
}

core::Status on_attempt_started(RunSummary& s, const json& e) {
  GRPO_TRY(s.attempt, field<int>(e, "attempt"));
  AttemptRecord a;
  a.attempt = s.attempt;
  a.checkpoint_step_at_start = field_or<std::int64_t>(e, "resume_step", s.latest_checkpoint_step);
  a.checkpoint_step_at_end = a.checkpoint_step_at_start;
  s.history.attempts.push_back(a);
  return core::ok_status();
}

// Nothing beyond what failure/decision carry; kept for timelines.
core::Status on_attempt_ended(RunSummary&, const json&) {
  return core::ok_status();
}

core::Status on_failure(RunSummary& s, const json& e) {
  GRPO_TRY(const std::string cls, field<std::string>(e, "class"));
  ++s.failures[cls];
  if (auto* a = current(s)) a->failure_class = cls;
  if (cls == "hang" && e.contains("phase")) {
    s.hang_phases[field_or<int>(e, "attempt", s.attempt)] = field_or<std::string>(e, "phase", "");
  }
  s.last_notable = "failure: " + field_or<std::string>(e, "description", cls);
  return core::ok_status();
}

core::Status on_decision(RunSummary& s, const json& e) {
  GRPO_TRY(const std::string kind, field<std::string>(e, "kind"));
  const bool spends = field_or<bool>(e, "spends_budget", false);
  if (auto* a = current(s); a && kind == "restart") a->spent_budget = spends;
  if (kind == "restart") ++s.restarts;
  if (kind == "requeue") ++s.requeues;
  for (const auto& n : field_or<std::vector<std::string>>(e, "exclude", {})) {
    if (std::find(s.excluded.begin(), s.excluded.end(), n) == s.excluded.end())
      s.excluded.push_back(n);
  }
  s.last_notable = kind + ": " + field_or<std::string>(e, "reason", "");
  return core::ok_status();
}

core::Status on_node_unhealthy(RunSummary& s, const json& e) {
  // Excluded like a lost node (docs/supervisor.md, "Node health").
  const std::string node = field_or<std::string>(e, "node", "");
  if (field_or<bool>(e, "excluded", false) && !node.empty() &&
      std::find(s.excluded.begin(), s.excluded.end(), node) == s.excluded.end()) {
    s.excluded.push_back(node);
  }
  s.last_notable = "node " + node + " unhealthy: " + field_or<std::string>(e, "detail", "");
  return core::ok_status();
}

core::Status on_timeouts_calibrated(RunSummary& s, const json& e) {
  s.phase_timeouts.clear();
  if (e.contains("limits") && e["limits"].is_object()) {
    for (const auto& [name, v] : e["limits"].items()) {
      if (v.is_number()) s.phase_timeouts[name] = v.get<double>();
    }
  }
  return core::ok_status();
}

core::Status on_hang_report(RunSummary& s, const json& e) {
  GRPO_TRY(const std::string summary, field<std::string>(e, "summary"));
  s.hang_report = e;
  s.last_notable = "hang report: " + summary;
  return core::ok_status();
}

core::Status on_remediation(RunSummary& s, const json& e) {
  if (e.contains("micro_batch")) s.micro_batch = field_or<int>(e, "micro_batch", 1);
  if (e.contains("offload")) s.offload = field_or<bool>(e, "offload", false);
  return core::ok_status();
}

// checkpoint_saved and checkpoint_loaded: a load moves the newest checkpoint only forward and
// leaves the attempt's end step alone.
core::Status on_checkpoint(RunSummary& s, const json& e, bool saved) {
  GRPO_TRY(const std::int64_t step, field<std::int64_t>(e, "step"));
  if (saved || step > s.latest_checkpoint_step) {
    s.latest_checkpoint_step = std::max(s.latest_checkpoint_step, step);
  }
  if (auto* a = current(s)) {
    if (saved) a->checkpoint_step_at_end = std::max(a->checkpoint_step_at_end, step);
  }
  return core::ok_status();
}

core::Status on_checkpoint_saved(RunSummary& s, const json& e) {
  return on_checkpoint(s, e, true);
}

core::Status on_checkpoint_loaded(RunSummary& s, const json& e) {
  return on_checkpoint(s, e, false);
}

core::Status on_step(RunSummary& s, const json& e) {
  s.last_step = std::max(s.last_step, field_or<std::int64_t>(e, "step", 0));
  if (field_or<int>(e, "rank", 0) != 0) return core::ok_status();
  if (e.contains("reward_mean")) s.reward = field_or<double>(e, "reward_mean", 0);
  if (e.contains("val_reward")) s.val_reward = field_or<double>(e, "val_reward", 0);
  if (e.contains("tokens_per_s")) s.tokens_per_s = field_or<double>(e, "tokens_per_s", 0);
  if (e.contains("loss")) s.loss = field_or<double>(e, "loss", 0);
  if (e.contains("kl")) s.kl = field_or<double>(e, "kl", 0);
  if (e.contains("wall_s") || e.contains("step_s")) {
    const double t = field_or<double>(e, e.contains("wall_s") ? "wall_s" : "step_s", 0);
    s.step_s = t;
    s.recent_step_s = s.recent_step_s == 0 ? t : 0.8 * s.recent_step_s + 0.2 * t;
  }
  return core::ok_status();
}

core::Status on_layout(RunSummary& s, const json& e) {
  std::string l;
  for (const char* k : {"tp", "pp", "cp", "dp", "ep", "etp"}) {
    l += (l.empty() ? "" : " ") + std::string(k) + "=" + std::to_string(field_or<int>(e, k, 1));
  }
  for (char& c : l) c = static_cast<char>(c == '=' ? c : std::toupper(c));
  s.layout = l;
  return core::ok_status();
}

core::Status on_validation(RunSummary& s, const json& e) {
  if (e.contains("val_reward")) s.val_reward = field_or<double>(e, "val_reward", 0);
  return core::ok_status();
}

core::Status on_oom_error(RunSummary& s, const json&) {
  ++s.oom_events;
  return core::ok_status();
}

core::Status on_expert_imbalance(RunSummary& s, const json&) {
  ++s.expert_imbalance_events;
  return core::ok_status();
}

core::Status on_straggler(RunSummary& s, const json&) {
  ++s.straggler_events;
  return core::ok_status();
}

core::Status on_warning(RunSummary& s, const json& e) {
  s.last_notable = "warning: " + field_or<std::string>(e, "message", "");
  return core::ok_status();
}

// hf_exported and hf_export_failed: the newest export's outcome.
core::Status on_hf_export(RunSummary& s, const json& e, bool ok) {
  HfExportRecord r;
  r.ok = ok;
  GRPO_TRY(r.path, field<std::string>(e, "path"));
  r.step = field_or<std::int64_t>(e, "step", -1);
  r.seconds = field_or<double>(e, "seconds", 0.0);
  r.message = field_or<std::string>(e, "message", "");
  if (!r.ok) s.last_notable = "Hugging Face export failed: " + r.message;
  s.hf_export = std::move(r);
  return core::ok_status();
}

core::Status on_hf_exported(RunSummary& s, const json& e) {
  return on_hf_export(s, e, true);
}

core::Status on_hf_export_failed(RunSummary& s, const json& e) {
  return on_hf_export(s, e, false);
}

core::Status on_run_finished(RunSummary& s, const json& e) {
  GRPO_TRY(const int code, field<int>(e, "exit_code"));
  s.exit_code = code;
  return core::ok_status();
}

using EventAction = core::Status (*)(RunSummary&, const json&);

struct EventActionEntry {
  const char* type;
  EventAction action;
};

constexpr std::array kEventActions{
    EventActionEntry{ev::kRunStarted, on_run_started},
    EventActionEntry{ev::kState, on_state},
    EventActionEntry{ev::kAttemptStarted, on_attempt_started},
    EventActionEntry{ev::kFailure, on_failure},
    EventActionEntry{ev::kDecision, on_decision},
    EventActionEntry{ev::kNodeUnhealthy, on_node_unhealthy},
    EventActionEntry{ev::kTimeoutsCalibrated, on_timeouts_calibrated},
    EventActionEntry{ev::kHangReport, on_hang_report},
    EventActionEntry{ev::kRemediation, on_remediation},
    EventActionEntry{ev::kAttemptEnded, on_attempt_ended},
    EventActionEntry{ev::kCheckpointSaved, on_checkpoint_saved},
    EventActionEntry{ev::kCheckpointLoaded, on_checkpoint_loaded},
    EventActionEntry{ev::kStep, on_step},
    EventActionEntry{core::telemetry::event::kLayout, on_layout},
    EventActionEntry{core::telemetry::event::kValidation, on_validation},
    EventActionEntry{ev::kOomError, on_oom_error},
    EventActionEntry{ev::kExpertImbalance, on_expert_imbalance},
    EventActionEntry{ev::kStraggler, on_straggler},
    EventActionEntry{ev::kWarning, on_warning},
    EventActionEntry{ev::kHfExported, on_hf_exported},
    EventActionEntry{ev::kHfExportFailed, on_hf_export_failed},
    EventActionEntry{ev::kRunFinished, on_run_finished},
};

// The action for an event type; null for a type the summary ignores (forward compatible).
EventAction action_for(const std::string& type) {
  for (const auto& entry : kEventActions) {
    if (type == entry.type) return entry.action;
  }
  return nullptr;
}

}  // namespace

json decision_fields(const Decision& d) {
  return std::visit(
      core::Overloaded{
          [](const Restart& r) {
            return json{{"kind", "restart"},
                        {"reason", r.reason},
                        {"delay_s", r.delay_s},
                        {"spends_budget", r.spends_budget},
                        {"exclude", r.exclude},
                        {"remediation", r.remediation ? json(r.remediation->what) : json(nullptr)}};
          },
          [](const Requeue& r) {
            return json{{"kind", "requeue"}, {"reason", r.reason}, {"spends_budget", false}};
          },
          [](const GiveUp& g) {
            return json{{"kind", "give_up"},
                        {"reason", g.reason},
                        {"exit_code", g.exit_code},
                        {"spends_budget", false}};
          },
      },
      d);
}

core::Status apply_event(RunSummary& s, const json& e) {
  if (!e.is_object()) return make_error(ErrorKind::kParse, "event is not a JSON object");
  GRPO_TRY(const std::string type, field<std::string>(e, "type"));
  const double time = field_or<double>(e, "time", 0.0);
  if (s.first_time == 0) s.first_time = time;
  if (time > s.last_time) s.last_time = time;
  if (const EventAction action = action_for(type)) GRPO_TRY_STATUS(action(s, e));
  s.goodput.apply(type, e, time);
  return core::ok_status();
}

core::Result<RunSummary> replay(const std::vector<json>& events) {
  RunSummary s;
  for (const auto& e : events) GRPO_TRY_STATUS(apply_event(s, e));
  return s;
}

core::Result<LogContents> parse_event_log(std::string_view text, const std::string& file_name) {
  LogContents out;
  std::size_t pos = 0;
  std::uint32_t line = 0;
  while (pos < text.size()) {
    ++line;
    const auto nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      out.torn = true;  // the writer died before finishing this line
      break;
    }
    const std::string_view l(text.data() + pos, nl - pos);
    pos = nl + 1;
    if (l.empty()) continue;
    try {
      out.events.push_back(json::parse(l));
    } catch (const json::exception& e) {
      return make_error(ErrorKind::kParse, std::string("not JSON: ") + e.what(),
                        {file_name, line, 0});
    }
  }
  return out;
}

}  // namespace grpo::supervise
