#include "grpo/supervise/event_log.h"

#include "grpo/core/json_text.h"
#include "grpo/core/overloaded.h"
#include "grpo/core/telemetry_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
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

  if (type == ev::kRunStarted) {
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
  } else if (type == ev::kState) {
    GRPO_TRY(const std::string to, field<std::string>(e, "to"));
    GRPO_TRY(s.state, parse_run_state(to));
  } else if (type == ev::kAttemptStarted) {
    GRPO_TRY(s.attempt, field<int>(e, "attempt"));
    AttemptRecord a;
    a.attempt = s.attempt;
    a.checkpoint_step_at_start = field_or<std::int64_t>(e, "resume_step", s.latest_checkpoint_step);
    a.checkpoint_step_at_end = a.checkpoint_step_at_start;
    s.history.attempts.push_back(a);
  } else if (type == ev::kFailure) {
    GRPO_TRY(const std::string cls, field<std::string>(e, "class"));
    ++s.failures[cls];
    if (auto* a = current(s)) a->failure_class = cls;
    if (cls == "hang" && e.contains("phase")) {
      s.hang_phases[field_or<int>(e, "attempt", s.attempt)] = field_or<std::string>(e, "phase", "");
    }
    s.last_notable = "failure: " + field_or<std::string>(e, "description", cls);
  } else if (type == ev::kDecision) {
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
  } else if (type == ev::kNodeUnhealthy) {
    // Excluded like a lost node (docs/supervisor.md, "Node health").
    const std::string node = field_or<std::string>(e, "node", "");
    if (field_or<bool>(e, "excluded", false) && !node.empty() &&
        std::find(s.excluded.begin(), s.excluded.end(), node) == s.excluded.end()) {
      s.excluded.push_back(node);
    }
    s.last_notable = "node " + node + " unhealthy: " + field_or<std::string>(e, "detail", "");
  } else if (type == ev::kTimeoutsCalibrated) {
    s.phase_timeouts.clear();
    if (e.contains("limits") && e["limits"].is_object()) {
      for (const auto& [name, v] : e["limits"].items()) {
        if (v.is_number()) s.phase_timeouts[name] = v.get<double>();
      }
    }
  } else if (type == ev::kHangReport) {
    GRPO_TRY(const std::string summary, field<std::string>(e, "summary"));
    s.hang_report = e;
    s.last_notable = "hang report: " + summary;
  } else if (type == ev::kRemediation) {
    if (e.contains("micro_batch")) s.micro_batch = field_or<int>(e, "micro_batch", 1);
    if (e.contains("offload")) s.offload = field_or<bool>(e, "offload", false);
  } else if (type == ev::kAttemptEnded) {
    // nothing beyond what failure/decision carry; kept for timelines
  } else if (type == ev::kCheckpointSaved || type == ev::kCheckpointLoaded) {
    GRPO_TRY(const std::int64_t step, field<std::int64_t>(e, "step"));
    if (type == ev::kCheckpointSaved || step > s.latest_checkpoint_step) {
      s.latest_checkpoint_step = std::max(s.latest_checkpoint_step, step);
    }
    if (auto* a = current(s)) {
      if (type == ev::kCheckpointSaved)
        a->checkpoint_step_at_end = std::max(a->checkpoint_step_at_end, step);
    }
  } else if (type == ev::kStep) {
    s.last_step = std::max(s.last_step, field_or<std::int64_t>(e, "step", 0));
    if (field_or<int>(e, "rank", 0) == 0) {
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
    }
  } else if (type == core::telemetry::event::kLayout) {
    std::string l;
    for (const char* k : {"tp", "pp", "cp", "dp", "ep", "etp"}) {
      l += (l.empty() ? "" : " ") + std::string(k) + "=" + std::to_string(field_or<int>(e, k, 1));
    }
    for (char& c : l) c = static_cast<char>(c == '=' ? c : std::toupper(c));
    s.layout = l;
  } else if (type == core::telemetry::event::kValidation) {
    if (e.contains("val_reward")) s.val_reward = field_or<double>(e, "val_reward", 0);
  } else if (type == ev::kOomError) {
    ++s.oom_events;
  } else if (type == ev::kExpertImbalance) {
    ++s.expert_imbalance_events;
  } else if (type == ev::kStraggler) {
    ++s.straggler_events;
  } else if (type == ev::kWarning) {
    s.last_notable = "warning: " + field_or<std::string>(e, "message", "");
  } else if (type == ev::kHfExported || type == ev::kHfExportFailed) {
    HfExportRecord r;
    r.ok = type == ev::kHfExported;
    GRPO_TRY(r.path, field<std::string>(e, "path"));
    r.step = field_or<std::int64_t>(e, "step", -1);
    r.seconds = field_or<double>(e, "seconds", 0.0);
    r.message = field_or<std::string>(e, "message", "");
    if (!r.ok) s.last_notable = "Hugging Face export failed: " + r.message;
    s.hf_export = std::move(r);
  } else if (type == ev::kRunFinished) {
    GRPO_TRY(const int code, field<int>(e, "exit_code"));
    s.exit_code = code;
  }
  s.goodput.apply(type, e, time);
  return core::ok_status();
}

core::Result<RunSummary> replay(const std::vector<json>& events) {
  RunSummary s;
  for (const auto& e : events) GRPO_TRY_STATUS(apply_event(s, e));
  return s;
}

core::Result<LogContents> read_event_log(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorKind::kNotFound, "cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
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
                        {path.string(), line, 0});
    }
  }
  return out;
}

EventLogWriter::EventLogWriter(int fd, std::int64_t seq, std::filesystem::path path)
    : fd_(fd), seq_(seq), path_(std::move(path)) {}

EventLogWriter::EventLogWriter(EventLogWriter&& o) noexcept
    : fd_(o.fd_), seq_(o.seq_), unsynced_(o.unsynced_), path_(std::move(o.path_)) {
  o.fd_ = -1;
}

EventLogWriter& EventLogWriter::operator=(EventLogWriter&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    seq_ = o.seq_;
    unsynced_ = o.unsynced_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

EventLogWriter::~EventLogWriter() {
  if (fd_ >= 0 && unsynced_) ::fdatasync(fd_);
  if (fd_ >= 0) ::close(fd_);
}

core::Result<EventLogWriter> EventLogWriter::open(const std::filesystem::path& path) {
  std::int64_t seq = 0;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    GRPO_TRY(LogContents existing, read_event_log(path));
    if (!existing.events.empty())
      seq = field_or<std::int64_t>(existing.events.back(), "seq", 0) + 1;
    if (existing.torn) {
      // Drop the torn line (the writer died in the middle of it): the next event starts on a
      // line of its own and the log stays readable.
      std::ifstream in(path, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      const auto nl = text.rfind('\n');
      const auto keep = nl == std::string::npos ? 0 : nl + 1;
      if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) {
        return make_error(ErrorKind::kIo, "cannot cut the torn last line of " + path.string() +
                                              ": " + std::strerror(errno));
      }
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return make_error(ErrorKind::kIo, "cannot open " + path.string() + ": " + std::strerror(errno));
  return EventLogWriter(fd, seq, path);
}

core::Status EventLogWriter::sync() {
  if (unsynced_ && fd_ >= 0) ::fdatasync(fd_);
  unsynced_ = false;
  return core::ok_status();
}

core::Status EventLogWriter::append(const std::string& type, json fields, double time, bool sync) {
  if (!fields.is_object()) fields = json::object();
  fields["schema"] = kEventSchema;
  fields["seq"] = seq_;
  fields["time"] = time;
  fields["type"] = type;
  const std::string line = core::json_text(fields) + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorKind::kIo,
                        "cannot append to " + path_.string() + ": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  ++seq_;
  unsynced_ = true;
  if (sync) return this->sync();
  return core::ok_status();
}

}  // namespace grpo::supervise
