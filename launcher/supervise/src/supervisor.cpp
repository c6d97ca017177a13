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
#include "grpo/slurm/signals.h"
#include "grpo/supervise/output_parsing.h"
#include "grpo/supervise/self_save.h"
#include "grpo/supervise/step_aggregate.h"

namespace grpo::supervise {

using core::Overloaded;

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;
using nlohmann::json;

// --- supervisor.json ------------------------------------------------------------------------

namespace {

constexpr const char* kConfigSchema = "grpo-launch/supervisor/v1";

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

json supervisor_config_to_json(const SupervisorConfig& c) {
  json j;
  j["schema"] = kConfigSchema;
  j["trainer_contract"] = c.contract == TrainerContract::kEmbedded ? "embedded" : "external";
  j["max_restarts"] = c.budget.max_restarts;
  j["backoff_base_s"] = c.budget.backoff_base_s;
  j["backoff_max_s"] = c.budget.backoff_max_s;
  j["no_progress_restarts"] = c.budget.no_progress_restarts;
  j["hang_timeout_s"] = optional_number(c.hang.timeout_s);
  j["hang_min_s"] = c.hang.min_s;
  j["hang_step_factor"] = c.hang.step_factor;
  j["startup_timeout_s"] = c.hang.startup_s;
  j["checkpoint_progress_s"] = optional_number(c.hang.checkpoint_progress_s);
  json fixed = json::object();
  for (const auto& [cls, seconds] : c.hang.phases.fixed)
    fixed[std::string(to_string(cls))] = seconds;
  j["phase_timeouts"] = fixed;
  j["phase_timeout_factor"] = c.hang.phases.factor;
  j["phase_warmup_steps"] = c.hang.phases.warmup_steps;
  j["straggler_margin"] = c.straggler.rel_margin;
  j["straggler_min_s"] = c.straggler.abs_margin_s;
  j["straggler_steps"] = c.straggler.consecutive;
  j["warn_oom"] = c.warnings.oom;
  j["warn_expert_imbalance"] = c.warnings.expert_imbalance;
  j["warn_straggler"] = c.warnings.straggler;
  j["total_steps"] = c.total_steps;
  j["micro_batch"] = c.micro_batch ? json(*c.micro_batch) : json(nullptr);
  j["offload_supported"] = c.offload_supported;
  j["min_nodes"] = c.min_nodes;
  j["divisible_by"] = c.divisible_by;
  j["world_unit"] = c.world_unit;
  json replans = json::object();
  for (const auto& [n, sets] : c.replans) replans[std::to_string(n)] = sets;
  j["replans"] = replans;
  j["stop_grace_s"] = c.stop_grace_s;
  j["checkpoint_timeout_s"] = c.checkpoint_timeout_s;
  j["end_margin_s"] = c.end_margin_s;
  j["saves_before_end"] = c.saves_before_end;
  j["reports_steps"] = c.reports_steps;
  j["health_check"] = c.health_check;
  j["health_gpus"] = c.health_gpus;
  j["mtbf_prior_s"] = c.mtbf_prior_s;
  j["step_event_ranks"] = c.step_event_ranks;
  j["export_hf"] = c.export_hf;
  j["stack_timeout_s"] = c.stack_timeout_s;
  return j;
}

core::Result<SupervisorConfig> supervisor_config_from_json(const json& j, const std::string& file) {
  const core::SourceLocation where{file};
  if (!j.is_object()) return make_error(ErrorKind::kWrongType, "not a JSON object", where);
  if (j.value("schema", std::string()) != kConfigSchema) {
    return make_error(ErrorKind::kInvalidValue,
                      std::string("schema is not \"") + kConfigSchema + "\"", where);
  }
  SupervisorConfig c;
  try {
    const std::string contract = j.value("trainer_contract", std::string("embedded"));
    if (contract != "embedded" && contract != "external") {
      return make_error(ErrorKind::kInvalidValue, "trainer_contract must be embedded or external",
                        where);
    }
    c.contract = contract == "embedded" ? TrainerContract::kEmbedded : TrainerContract::kExternal;
    c.budget.max_restarts = j.value("max_restarts", c.budget.max_restarts);
    c.budget.backoff_base_s = j.value("backoff_base_s", c.budget.backoff_base_s);
    c.budget.backoff_max_s = j.value("backoff_max_s", c.budget.backoff_max_s);
    c.budget.no_progress_restarts = j.value("no_progress_restarts", c.budget.no_progress_restarts);
    if (j.contains("hang_timeout_s") && !j["hang_timeout_s"].is_null())
      c.hang.timeout_s = j["hang_timeout_s"].get<double>();
    c.hang.min_s = j.value("hang_min_s", c.hang.min_s);
    c.hang.step_factor = j.value("hang_step_factor", c.hang.step_factor);
    c.hang.startup_s = j.value("startup_timeout_s", c.hang.startup_s);
    if (j.contains("checkpoint_progress_s") && !j["checkpoint_progress_s"].is_null())
      c.hang.checkpoint_progress_s = j["checkpoint_progress_s"].get<double>();
    if (j.contains("phase_timeouts")) {
      for (const auto& [name, seconds] : j.at("phase_timeouts").items()) {
        const auto cls = parse_phase_class(name);
        const double v = seconds.get<double>();
        if (!cls || !(v > 0)) {
          return make_error(ErrorKind::kInvalidValue,
                            "phase_timeouts: '" + name + "' is not a phase with seconds above 0",
                            where);
        }
        c.hang.phases.fixed[*cls] = v;
      }
    }
    c.hang.phases.factor = j.value("phase_timeout_factor", c.hang.phases.factor);
    c.hang.phases.warmup_steps = j.value("phase_warmup_steps", c.hang.phases.warmup_steps);
    c.straggler.rel_margin = j.value("straggler_margin", c.straggler.rel_margin);
    c.straggler.abs_margin_s = j.value("straggler_min_s", c.straggler.abs_margin_s);
    c.straggler.consecutive = j.value("straggler_steps", c.straggler.consecutive);
    c.warnings.oom = j.value("warn_oom", c.warnings.oom);
    c.warnings.expert_imbalance = j.value("warn_expert_imbalance", c.warnings.expert_imbalance);
    c.warnings.straggler = j.value("warn_straggler", c.warnings.straggler);
    c.total_steps = j.value("total_steps", c.total_steps);
    if (j.contains("micro_batch") && !j["micro_batch"].is_null())
      c.micro_batch = j["micro_batch"].get<int>();
    c.offload_supported = j.value("offload_supported", c.offload_supported);
    c.min_nodes = j.value("min_nodes", c.min_nodes);
    c.divisible_by = j.value("divisible_by", c.divisible_by);
    c.world_unit = j.value("world_unit", c.world_unit);
    if (j.contains("replans")) {
      for (const auto& [n, sets] : j.at("replans").items()) {
        int nodes = 0;
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), nodes);
        if (ec != std::errc() || end != n.data() + n.size() || nodes < 1) {
          return make_error(ErrorKind::kInvalidValue,
                            "replans: '" + n + "' is not a number of nodes", where);
        }
        c.replans[nodes] = sets.get<std::vector<std::string>>();
      }
    }
    c.stop_grace_s = j.value("stop_grace_s", c.stop_grace_s);
    c.checkpoint_timeout_s = j.value("checkpoint_timeout_s", c.checkpoint_timeout_s);
    c.end_margin_s = j.value("end_margin_s", c.end_margin_s);
    c.saves_before_end = j.value("saves_before_end", c.saves_before_end);
    c.reports_steps = j.value("reports_steps", c.reports_steps);
    c.health_check = j.value("health_check", c.health_check);
    c.health_gpus = j.value("health_gpus", c.health_gpus);
    c.mtbf_prior_s = j.value("mtbf_prior_s", c.mtbf_prior_s);
    c.step_event_ranks = j.value("step_event_ranks", c.step_event_ranks);
    c.export_hf = j.value("export_hf", c.export_hf);
    c.stack_timeout_s = j.value("stack_timeout_s", c.stack_timeout_s);
  } catch (const json::exception& e) {
    return make_error(ErrorKind::kWrongType, std::string("a field has the wrong type: ") + e.what(),
                      where);
  }
  if (c.budget.max_restarts < 0 || c.budget.no_progress_restarts < 1 ||
      c.budget.backoff_base_s < 0 || c.budget.backoff_max_s < 0 ||
      (c.hang.timeout_s && *c.hang.timeout_s <= 0) || c.stop_grace_s < 0 ||
      (c.micro_batch && *c.micro_batch < 1) || c.min_nodes < 0 || c.world_unit < 1 ||
      c.straggler.consecutive < 1 || !(c.hang.phases.factor >= 1) ||
      c.hang.phases.warmup_steps < 0 || c.step_event_ranks < 1 || !(c.stack_timeout_s >= 0)) {
    return make_error(ErrorKind::kInvalidValue, "a setting is out of range", where);
  }
  return c;
}

std::int64_t newest_checkpoint_on_disk(const fs::path& run_dir) {
  std::int64_t newest = -1;
  std::error_code ec;
  for (fs::directory_iterator it(run_dir / "checkpoints", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("step_", 0) != 0 || name.size() < 6) continue;
    std::int64_t step = 0;
    bool digits = true;
    for (std::size_t i = 5; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9') {
        digits = false;
        break;
      }
      step = step * 10 + (name[i] - '0');
    }
    std::error_code e2;
    if (digits && fs::is_regular_file(it->path() / "manifest.json", e2)) {
      newest = std::max(newest, step);
    }
  }
  return newest;
}

// --- the loop -------------------------------------------------------------------------------

enum class Supervisor::Ending { kCompleted, kFailed };

struct Supervisor::Attempt {
  int number = 0;
  AttemptSpec spec;
  double start = 0;
  std::int64_t resume_step = -1;
  AttemptMonitor monitor;
  std::vector<Failure> candidates;  // failures seen, in order
  std::set<int> sent;               // signals we sent to the ranks
  bool teardown = false;
  double teardown_at = 0;
  bool killed = false;
  double killed_at = 0;
  bool hang_kill = false;
  std::optional<Hang> hang;            // the hang decided, for its report
  std::optional<StackRequest> stacks;  // hang attribution: the ranks' stacks coming in
  std::optional<double> comm_seen_at;  // the first failure was only a peer's COMM_ERROR
  std::vector<std::string> hosts;      // the step's nodes (Slurm)
  double last_node_check = 0;
  std::optional<double> checkpoint_requested_at;
  std::int64_t checkpoint_at_request = -1;
  bool checkpoint_saved = false;
  std::optional<ExitStatus> exit;
  std::int64_t checkpoint_on_disk = -1;
  double last_disk_check = 0;
  int forwarded = 0;
  std::optional<StepAggregator> step_ranks;  // world > step_event_ranks

  Attempt(int n, AttemptSpec s, double now, std::int64_t resume, const SupervisorConfig& c)
      : number(n),
        spec(std::move(s)),
        start(now),
        resume_step(resume),
        monitor(spec.world_size(), now, c.hang, c.straggler,
                c.contract == TrainerContract::kEmbedded),
        checkpoint_on_disk(resume),
        last_disk_check(now) {
    if (spec.world_size() > c.step_event_ranks) step_ranks.emplace(spec.world_size());
  }
};

namespace {

json failure_fields(const Failure& f) {
  json j;
  j["class"] = std::string(failure_class(f));
  j["description"] = describe(f);
  std::visit(Overloaded{
                 [&](const RankCrash& c) {
                   j["rank"] = c.rank;
                   j["exit_code"] = c.exit_code;
                   j["signal"] = c.signal;
                   if (!c.message.empty()) j["message"] = c.message;
                 },
                 [&](const Hang& h) {
                   j["rank"] = h.ranks.empty() ? -1 : h.ranks.front();
                   j["ranks"] = h.ranks;
                   j["silent_s"] = h.silent_s;
                   j["timeout_s"] = h.timeout_s;
                   if (!h.phase.empty()) j["phase"] = h.phase;
                   if (!h.trainer_phase.empty()) j["trainer_phase"] = h.trainer_phase;
                 },
                 [&](const OutOfMemory& o) {
                   j["rank"] = o.rank;
                   j["source"] = o.source;
                   if (!o.phase.empty()) j["phase"] = o.phase;
                   j["requested_bytes"] =
                       o.requested_bytes ? json(*o.requested_bytes) : json(nullptr);
                 },
                 [&](const CommFailure& c) {
                   j["rank"] = c.rank;
                   if (!c.message.empty()) j["message"] = c.message;
                 },
                 [&](const NodeLoss& n) { j["node"] = n.node; },
                 [&](const Preemption& p) { j["reason"] = p.reason; },
                 [&](const FatalError& e) {
                   j["exit_code"] = e.exit_code;
                   j["message"] = e.message;
                 },
                 [&](const DiskFull& d) {
                   j["rank"] = d.rank;
                   j["message"] = d.message;
                 },
                 [&](const Incomplete& i) {
                   j["step"] = i.step;
                   j["total_steps"] = i.total_steps;
                   j["resume_step"] = i.resume_step;
                   j["message"] = i.message;
                 },
             },
             f);
  return j;
}

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

core::Result<std::unique_ptr<Supervisor>> Supervisor::open(SupervisorOptions options,
                                                           SupervisorDeps deps) {
  std::error_code ec;
  fs::create_directories(options.run_dir, ec);
  const fs::path log = options.run_dir / "events.jsonl";
  std::vector<json> events;
  if (fs::exists(log, ec)) {
    GRPO_TRY(LogContents contents, read_event_log(log));
    events = std::move(contents.events);
  }
  GRPO_TRY(RunSummary summary, replay(events));
  GRPO_TRY(EventLogWriter writer, EventLogWriter::open(log));
  auto s = std::unique_ptr<Supervisor>(
      new Supervisor(std::move(options), std::move(deps), std::move(writer), std::move(summary)));
  // What the log says beyond the summary: warnings already given, an attempt left open by a
  // supervisor that died.
  int last_started = 0, last_ended = 0;
  for (const auto& e : events) {
    const std::string type = e.value("type", std::string());
    if (type == ev::kWarning) {
      s->warned_at_[e.value("kind", std::string())] = e.value("count", 0);
    } else if (type == ev::kAttemptStarted) {
      last_started = e.value("attempt", 0);
    } else if (type == ev::kAttemptEnded) {
      last_ended = e.value("attempt", 0);
    } else if (type == ev::kStep) {
      if (e.contains("wall_s") && e["wall_s"].is_number()) {
        s->timings_.add_step(e["wall_s"].get<double>());
      }
    } else if (type == ev::kCheckpointSaved) {
      if (e.contains("seconds") && e["seconds"].is_number()) {
        s->timings_.add_checkpoint(e["seconds"].get<double>());
      }
    } else if (type == ev::kTimeoutsCalibrated) {
      // The calibration continues from the newest record (docs/supervisor.md).
      s->timings_.phases().restore(e);
      s->recorded_timeouts_.clear();
      if (e.contains("limits") && e["limits"].is_object()) {
        for (const auto& [name, v] : e["limits"].items()) {
          const auto cls = parse_phase_class(name);
          if (cls && v.is_number()) s->recorded_timeouts_[*cls] = v.get<double>();
        }
      }
    }
  }
  s->open_attempt_ = last_started > last_ended ? last_started : 0;
  return s;
}

Supervisor::Supervisor(SupervisorOptions options, SupervisorDeps deps, EventLogWriter writer,
                       RunSummary summary)
    : o_(std::move(options)),
      d_(std::move(deps)),
      writer_(std::move(writer)),
      summary_(std::move(summary)),
      tensorboard_(o_.run_dir, trainer_argv_wants_tensorboard(o_.trainer_argv)) {
  if (!d_.newest_checkpoint) {
    const fs::path dir = o_.run_dir;
    d_.newest_checkpoint = [dir] { return newest_checkpoint_on_disk(dir); };
  }
  micro_batch_ = summary_.micro_batch.value_or(o_.config.micro_batch.value_or(0));
  offload_ = summary_.offload;
  for (const auto& n : o_.exclude) {
    if (std::find(excluded_.begin(), excluded_.end(), n) == excluded_.end()) excluded_.push_back(n);
  }
}

core::Status Supervisor::record(const std::string& type, json fields) {
  const bool forwarded = fields.is_object() && fields.value("source", std::string()) == "trainer";
  const double wall = d_.clock.wall();
  GRPO_TRY_STATUS(writer_.append(type, fields, wall, !forwarded));
  fields["schema"] = kEventSchema;
  fields["time"] = wall;
  fields["type"] = type;
  if (auto st = apply_event(summary_, fields); !st.ok()) {
    return make_error(ErrorKind::kInternal, "own event does not replay: " + st.error().message);
  }
  tensorboard_.observe(type, summary_);
  return core::ok_status();
}

core::Status Supervisor::transition(Trigger trigger, const std::string& reason) {
  GRPO_TRY(const RunState to, next_state(summary_.state, trigger));
  if (to == summary_.state) return core::ok_status();
  spdlog::info("state {} -> {} ({}): {}", to_string(summary_.state), to_string(to),
               to_string(trigger), reason);
  return record(ev::kState, {{"from", std::string(to_string(summary_.state))},
                             {"to", std::string(to_string(to))},
                             {"trigger", std::string(to_string(trigger))},
                             {"reason", reason}});
}

core::Status Supervisor::warn(const std::string& kind, const std::string& message) {
  spdlog::warn("{}", message);
  return record(ev::kWarning, {{"kind", kind}, {"message", message}});
}

core::Status Supervisor::count_warnings() {
  const int oom = std::max(summary_.oom_events,
                           summary_.failures.count("oom") ? summary_.failures.at("oom") : 0);
  const std::vector<std::tuple<std::string, int, int, std::string>> counts = {
      {"oom", oom, o_.config.warnings.oom, "out-of-memory events"},
      {"expert_imbalance", summary_.expert_imbalance_events, o_.config.warnings.expert_imbalance,
       "EXPERT_IMBALANCE events"},
      {"straggler", summary_.straggler_events, o_.config.warnings.straggler, "straggler events"},
  };
  for (const auto& [kind, count, threshold, what] : counts) {
    if (threshold <= 0 || count < threshold) continue;
    const int last = warned_at_.count(kind) ? warned_at_[kind] : 0;
    if (last > 0 && count < 2 * last) continue;
    warned_at_[kind] = count;
    const std::string message = std::to_string(count) + " " + what + " so far (warning threshold " +
                                std::to_string(threshold) + ")";
    spdlog::warn("{}", message);
    GRPO_TRY_STATUS(
        record(ev::kWarning,
               {{"kind", kind}, {"message", message}, {"count", count}, {"threshold", threshold}}));
  }
  return core::ok_status();
}

void Supervisor::tick(bool force) {
  const double now = d_.clock.now();
  if (!force && now - last_tick_ < 1.0) return;
  last_tick_ = now;
  (void)writer_.sync();
  d_.status.update(summary_, d_.clock.wall());
}

int Supervisor::usable_nodes(int available) const {
  int n = std::min(available, o_.nodes);
  for (; n >= 1; --n) {
    const int world = n * o_.ranks_per_node;
    // Fewer nodes run the layout re-planned for them, or (without re-plans) the plan's layout
    // with a smaller DP, which needs every model-parallel group whole.
    const auto& replans = o_.config.replans;
    bool ok = n == o_.nodes ||
              (replans.empty() ? o_.config.world_unit < 1 || world % o_.config.world_unit == 0
                               : replans.count(n) > 0);
    for (int d : o_.config.divisible_by) {
      if (d > 0 && d % world != 0) ok = false;
    }
    if (ok) return n;
  }
  return 0;
}

AttemptSpec Supervisor::make_spec(int attempt, int nodes, std::int64_t /*resume_step*/) const {
  AttemptSpec spec;
  spec.attempt = attempt;
  spec.argv = o_.trainer_argv;
  if (auto it = o_.config.replans.find(nodes); nodes != o_.nodes && it != o_.config.replans.end()) {
    for (const std::string& kv : it->second) {
      spec.argv.push_back("--set");
      spec.argv.push_back(kv);
    }
  }
  if (o_.config.contract == TrainerContract::kEmbedded && micro_batch_ > 0) {
    spec.argv.push_back("--set");
    spec.argv.push_back(std::string(kMicroBatchKey) + "=" + std::to_string(micro_batch_));
  }
  spec.env = o_.env;
  spec.env["GRPO_ATTEMPT"] = std::to_string(attempt);
  // The failure rate seen so far, for trainer.save_freq = auto (docs/supervisor.md): every
  // failure but preemptions (a checkpoint comes first) and fatal ones (no restart follows).
  int failures = 0;
  for (const auto& [cls, n] : summary_.failures) {
    if (cls != "preemption" && cls != "fatal") failures += n;
  }
  const double prior = o_.config.mtbf_prior_s > 0
                           ? o_.config.mtbf_prior_s
                           : core::kDefaultNodeMtbfHours * 3600.0 / std::max(1, o_.nodes);
  const core::MtbfEstimate mtbf = core::estimate_mtbf(
      prior, failures, summary_.first_time > 0 ? d_.clock.wall() - summary_.first_time : 0.0);
  spec.env["GRPO_MTBF_S"] = std::to_string(mtbf.seconds);
  spec.env["GRPO_MTBF_SOURCE"] = mtbf.source;
  spec.env["GRPO_MTBF_FAILURES"] = std::to_string(mtbf.failures);
  spec.nodes = nodes;
  spec.ranks_per_node = o_.ranks_per_node;
  spec.exclude = excluded_;
  spec.log_dir = o_.run_dir / "logs" / ("attempt-" + std::to_string(attempt));
  return spec;
}

Context Supervisor::policy_context(const Attempt& a) const {
  Context c;
  c.under_slurm = d_.job.under_slurm();
  c.nodes = a.spec.nodes;
  c.excluded = excluded_;
  c.micro_batch = std::max(1, micro_batch_);
  c.offload = offload_;
  c.offload_supported = o_.config.offload_supported;
  c.made_progress = a.checkpoint_on_disk > a.resume_step;
  // Shrinking: how many nodes would still run without one more node.
  const int min_nodes = o_.config.min_nodes > 0 ? o_.config.min_nodes : o_.nodes;
  const auto alloc = d_.job.allocation_nodes();
  int available = alloc.empty() ? a.spec.nodes : 0;
  for (const auto& n : alloc) {
    if (std::find(excluded_.begin(), excluded_.end(), n) == excluded_.end()) ++available;
  }
  c.spares = std::max(0, available - a.spec.nodes);
  const int after_loss = usable_nodes(available - 1);
  if (after_loss >= 1 && after_loss >= min_nodes) {
    c.min_nodes = after_loss;
    c.nodes = after_loss + 1;
  } else {
    c.min_nodes = a.spec.nodes;
  }
  return c;
}

core::Result<std::optional<Failure>> Supervisor::check_end_time(double now) {
  if (!d_.job.under_slurm()) return std::optional<Failure>{};
  if (now >= next_end_check_) {
    next_end_check_ = now + o_.end_time_check_s;
    auto end = d_.job.end_time();
    if (end.ok()) {
      end_time_ = end.value();
    } else {
      spdlog::debug("cannot read the job's end time: {}", end.error().message);
    }
  }
  if (!end_time_) return std::optional<Failure>{};
  if (o_.config.saves_before_end) {
    if (d_.clock.wall() >= self_save_plan(*end_time_, o_.config.end_margin_s).save_by) {
      return std::optional<Failure>{Preemption{"end time"}};
    }
    return std::optional<Failure>{};
  }
  const double s = timings_.longest_step().value_or(0.0);
  const double margin = o_.config.end_margin_s > 0
                            ? o_.config.end_margin_s
                            : std::max(60.0, 3.0 * s + 3.0 * timings_.longest_checkpoint());
  if (d_.clock.wall() >= *end_time_ - margin) {
    return std::optional<Failure>{Preemption{"end time"}};
  }
  return std::optional<Failure>{};
}

core::Status Supervisor::handle_output(Attempt& a, RankOutput& out) {
  auto parsed = out.event ? std::move(out.event) : parse_event_line(out.line);
  if (!parsed) {
    spdlog::debug("rank {}: {}", out.rank, out.line);
    return core::ok_status();
  }
  json e = std::move(*parsed);
  const double now = d_.clock.now();
  const std::string type = e["type"].get<std::string>();
  if (type == "stack") {
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
  if (type != "heartbeat" && !(folded && out.rank >= o_.config.step_event_ranks)) {
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
  if (type == "checkpoint_saved") {
    a.checkpoint_on_disk = std::max(a.checkpoint_on_disk, e.value("step", std::int64_t{-1}));
    if (a.checkpoint_requested_at) a.checkpoint_saved = true;
    spdlog::info("checkpoint of step {} saved ({})", e.value("step", 0),
                 e.value("reason", std::string("?")));
  } else if (type == "checkpoint_skipped") {
    spdlog::warn("rank {} skipped a checkpoint: {} ({})", out.rank, e.value("path", std::string()),
                 e.value("reason", std::string()));
  } else if (type == "fault_injected") {
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
    GRPO_TRY(std::vector<AttemptEvent> events, d_.runner.poll(o_.poll_s));
    for (auto& event : events) {
      GRPO_TRY_STATUS(std::visit(
          Overloaded{
              [&](RankOutput& out) { return handle_output(a, out); },
              [&](const RankExit& x) -> core::Status {
                const bool ours = a.teardown && caused_by_us(x.status, a.sent);
                spdlog::log(slurm::shell_code(x.status) == 0 || ours ? spdlog::level::debug
                                                                     : spdlog::level::warn,
                            "rank {} ended: {}{}", x.rank, slurm::describe(x.status),
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
    const double now = d_.clock.now();

    // Signals sent to us: the job must yield (USR2 before the time limit, TERM, Ctrl-C).
    while (auto sig = d_.signals.take()) {
      spdlog::warn("received {}", slurm::signal_name(*sig));
      const bool again = std::any_of(a.candidates.begin(), a.candidates.end(), [](const auto& f) {
        return std::holds_alternative<Preemption>(f);
      });
      if (again && (*sig == SIGINT || *sig == SIGTERM) && !a.killed) {
        spdlog::warn("second {}: stopping the ranks now", slurm::signal_name(*sig));
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
      if (!again) a.candidates.push_back(Preemption{slurm::signal_name(*sig)});
    }
    if (!a.exit && !a.teardown && !a.checkpoint_requested_at) {
      GRPO_TRY(auto end, check_end_time(now));
      if (end) a.candidates.push_back(*end);
    }

    // A node that died is declared by Slurm only after SlurmdTimeout; meanwhile a new step waits
    // for its resources ("step creation temporarily disabled") and the old one's ranks report
    // COMM_ERROR. While the attempt is not healthy, or a COMM_ERROR waits for its cause, ask
    // Slurm every kNodeCheckS about the step's nodes.
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

    // Trainers without heartbeats make progress by writing checkpoints.
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

    if (a.exit) break;

    // Hangs and stalls.
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

    // Act on what was found.
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
                         slurm::signal_name(sig));
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
    tick(false);
  }
  // Finished: every rank exited 0 by itself, or (grpo-trainer) said `done` even while we were
  // asking it to yield. A torchrun-style trainer that exits 0 after our SIGTERM only stopped.
  const bool success = slurm::shell_code(*a.exit) == 0;
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

core::Result<int> Supervisor::run() {
  if (summary_.exit_code && summary_.state == RunState::kSucceeded) {
    spdlog::info("the run already finished successfully; nothing to do");
    return kExitSucceeded;
  }
  // Stopped between training's end and run_finished (during the HF export): finish that.
  if (summary_.state == RunState::kSucceeded) return finish_succeeded();
  if (open_attempt_ > 0) {
    GRPO_TRY_STATUS(record(ev::kAttemptEnded, {{"attempt", open_attempt_},
                                               {"outcome", "abandoned"},
                                               {"reason", "the supervisor stopped during it"}}));
  }
  const auto job_id = d_.job.job_id();
  GRPO_TRY_STATUS(record(ev::kRunStarted, {{"profile", o_.profile},
                                           {"model", o_.model},
                                           {"world_size", o_.nodes * o_.ranks_per_node},
                                           {"nodes", o_.nodes},
                                           {"ranks_per_node", o_.ranks_per_node},
                                           {"total_steps", o_.config.total_steps},
                                           {"trainer_cmd", o_.trainer_argv},
                                           {"runner", std::string(d_.runner.kind())},
                                           {"slurm_job_id", job_id ? json(*job_id) : json(nullptr)},
                                           {"restart_count", d_.job.restart_count()},
                                           {"supervisor_start", summary_.supervisor_starts}}));
  tick(true);

  while (true) {
    if (summary_.state == RunState::kRestarting) {
      GRPO_TRY_STATUS(
          transition(Trigger::kLaunch, "attempt " + std::to_string(summary_.attempt + 1)));
    }
    const int number = summary_.attempt + 1;
    const std::int64_t resume = d_.newest_checkpoint();
    const auto alloc = d_.job.allocation_nodes();
    int available = o_.nodes;
    if (!alloc.empty()) {
      available = 0;
      for (const auto& n : alloc) {
        if (std::find(excluded_.begin(), excluded_.end(), n) == excluded_.end()) ++available;
      }
    }
    const int nodes = std::max(1, usable_nodes(available));
    std::vector<std::string> hosts;
    for (const auto& n : alloc) {
      if (static_cast<int>(hosts.size()) == nodes) break;
      if (std::find(excluded_.begin(), excluded_.end(), n) == excluded_.end()) hosts.push_back(n);
    }
    if (d_.health) {
      GRPO_TRY(const auto verdict, check_nodes(number, hosts));
      if (const int* code = std::get_if<int>(&verdict)) return *code;
      if (std::get<bool>(verdict)) continue;  // nodes excluded: pick (and check) nodes again
    }
    Attempt a(number, make_spec(number, nodes, resume), d_.clock.now(), resume, o_.config);
    a.last_node_check = a.start;
    a.hosts = hosts;
    GRPO_TRY_STATUS(record(ev::kAttemptStarted,
                           {{"attempt", number},
                            {"world_size", a.spec.world_size()},
                            {"nodes", nodes},
                            {"hosts", hosts},
                            {"spares", std::max(0, available - nodes)},
                            {"excluded", excluded_},
                            {"micro_batch", micro_batch_ > 0 ? json(micro_batch_) : json(nullptr)},
                            {"resume_step", resume}}));
    spdlog::info("attempt {}: {} rank(s) on {} node(s), resuming from {}", number,
                 a.spec.world_size(), nodes,
                 resume >= 0 ? "step " + std::to_string(resume) : std::string("the start"));
    Ending ending = Ending::kFailed;
    if (auto st = d_.runner.start(a.spec); !st.ok()) {
      spdlog::error("cannot start attempt {}: {}", number, st.error().message);
      a.candidates.push_back(FatalError{127, "cannot start the trainer: " + st.error().message});
      a.exit = Exited{127};
      GRPO_TRY_STATUS(transition(Trigger::kFailure, st.error().message));
    } else {
      GRPO_TRY(ending, watch(a));
    }
    if (a.step_ranks) {
      for (auto& summary : a.step_ranks->flush()) {
        summary["attempt"] = number;
        GRPO_TRY_STATUS(record(ev::kStepRanks, std::move(summary)));
      }
    }
    const double duration = d_.clock.now() - a.start;

    if (ending == Ending::kCompleted) {
      GRPO_TRY_STATUS(
          record(ev::kAttemptEnded,
                 {{"attempt", number}, {"outcome", "succeeded"}, {"duration_s", duration}}));
      GRPO_TRY_STATUS(transition(Trigger::kCompleted, "training finished"));
      return finish_succeeded();
    }

    // The root cause.
    std::optional<Failure> failure;
    for (const auto& f : a.candidates) {
      if (!failure || failure_priority(f) > failure_priority(*failure)) failure = f;
    }
    if (!failure) failure = RankCrash{-1, slurm::shell_code(*a.exit), 0, "the step failed"};
    if (d_.job.under_slurm() && !std::holds_alternative<FatalError>(*failure) &&
        !std::holds_alternative<Preemption>(*failure) &&
        !std::holds_alternative<NodeLoss>(*failure)) {
      // A crashed node is often reported by its peers first (COMM_ERROR) and by Slurm later.
      auto bad = d_.job.unhealthy_nodes(a.hosts);
      if (bad.ok() && !bad->empty()) failure = NodeLoss{bad->front()};
    }
    if (summary_.state != RunState::kStopping) {
      GRPO_TRY_STATUS(transition(
          std::holds_alternative<Preemption>(*failure) ? Trigger::kPreemption : Trigger::kFailure,
          describe(*failure)));
    }
    json ff = failure_fields(*failure);
    ff["attempt"] = number;
    spdlog::warn("attempt {} failed: {}", number, describe(*failure));
    GRPO_TRY_STATUS(record(ev::kFailure, ff));
    GRPO_TRY_STATUS(
        record(ev::kAttemptEnded,
               {{"attempt", number},
                {"outcome", std::holds_alternative<Preemption>(*failure) ? "preempted" : "failed"},
                {"class", std::string(failure_class(*failure))},
                {"exit", slurm::describe(*a.exit)},
                {"duration_s", duration}}));

    History prior = summary_.history;
    if (!prior.attempts.empty() && prior.attempts.back().attempt == number) {
      prior.attempts.pop_back();
    }
    const Context ctx = policy_context(a);
    const Decision decision = decide(*failure, prior, o_.config.budget, ctx);
    json dj = std::visit(
        Overloaded{
            [](const Restart& r) {
              return json{
                  {"kind", "restart"},
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
        decision);
    dj["attempt"] = number;
    dj["restarts_spent"] = prior.restarts_spent();
    dj["max_restarts"] = o_.config.budget.max_restarts;
    spdlog::info("decision: {} ({})", dj["kind"].get<std::string>(),
                 dj["reason"].get<std::string>());
    GRPO_TRY_STATUS(record(ev::kDecision, dj));

    const auto finish = [&](const char* state, int code) -> core::Result<int> {
      GRPO_TRY_STATUS(record(ev::kRunFinished, {{"state", state}, {"exit_code", code}}));
      tick(true);
      d_.status.finish(summary_, d_.clock.wall());
      return code;
    };
    if (const auto* r = std::get_if<Restart>(&decision)) {
      GRPO_TRY_STATUS(transition(Trigger::kRestart, r->reason));
      if (r->remediation) {
        json rj = {{"what", r->remediation->what}, {"attempt", number}};
        if (r->remediation->micro_batch) {
          rj["micro_batch"] = *r->remediation->micro_batch;
          rj["previous_micro_batch"] = micro_batch_;
          micro_batch_ = *r->remediation->micro_batch;
        }
        if (r->remediation->offload) {
          rj["offload"] = *r->remediation->offload;
          offload_ = *r->remediation->offload;
        }
        spdlog::warn("remediation: {}", r->remediation->what);
        GRPO_TRY_STATUS(record(ev::kRemediation, rj));
      }
      for (const auto& n : r->exclude) {
        if (std::find(excluded_.begin(), excluded_.end(), n) == excluded_.end()) {
          excluded_.push_back(n);
        }
      }
      // The backoff; a signal during it means the job must yield now.
      const double until = d_.clock.now() + r->delay_s;
      std::optional<int> sig;
      while (d_.clock.now() < until && !sig) {
        tick(false);
        d_.clock.sleep(std::min(0.1, until - d_.clock.now()));
        sig = d_.signals.take();
      }
      if (sig) {
        const Preemption p{slurm::signal_name(*sig) + " during the restart backoff"};
        spdlog::warn("{}", describe(Failure{p}));
        const Decision d2 = decide(p, prior, o_.config.budget, ctx);
        GRPO_TRY_STATUS(transition(Trigger::kLaunch, "attempt " + std::to_string(number + 1)));
        GRPO_TRY_STATUS(transition(Trigger::kPreemption, describe(Failure{p})));
        if (const auto* g = std::get_if<GiveUp>(&d2)) {
          GRPO_TRY_STATUS(record(ev::kDecision, {{"kind", "give_up"},
                                                 {"reason", g->reason},
                                                 {"exit_code", g->exit_code},
                                                 {"spends_budget", false},
                                                 {"attempt", number}}));
          GRPO_TRY_STATUS(transition(Trigger::kGiveUp, g->reason));
          return finish("failed", g->exit_code);
        }
        GRPO_TRY_STATUS(record(ev::kDecision, {{"kind", "requeue"},
                                               {"reason", describe(Failure{p})},
                                               {"spends_budget", false},
                                               {"attempt", number}}));
        GRPO_TRY_STATUS(transition(Trigger::kRequeue, describe(Failure{p})));
        auto code = finish("requeued", kExitRequeue);
        if (auto st = d_.job.requeue(); !st.ok()) {
          spdlog::error("scontrol requeue failed: {}", st.error().message);
        }
        return code;
      }
      continue;
    }
    if (const auto* q = std::get_if<Requeue>(&decision)) {
      GRPO_TRY_STATUS(transition(Trigger::kRequeue, q->reason));
      auto code = finish("requeued", kExitRequeue);
      spdlog::info("requeueing job {}", job_id.value_or("?"));
      if (auto st = d_.job.requeue(); !st.ok()) {
        spdlog::error("scontrol requeue failed: {}; the job ends with exit {}", st.error().message,
                      kExitRequeue);
      }
      return code;
    }
    const auto& g = std::get<GiveUp>(decision);
    GRPO_TRY_STATUS(transition(Trigger::kGiveUp, g.reason));
    spdlog::error("giving up: {} (exit {})", g.reason, g.exit_code);
    return finish("failed", g.exit_code);
  }
}

}  // namespace grpo::supervise
