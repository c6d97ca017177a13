// The supervisor (docs/supervisor.md): opening the run, its state changes and events, the
// attempts' specs and the run loop. Watching one attempt: supervisor_watch.cpp; supervisor.json:
// supervisor_config.cpp; the attempt's state: supervisor_attempt.h.
#include "grpo/supervise/supervisor.h"
#include "grpo/core/run_dir.h"
#include "grpo/io/checkpoint_files.h"

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

#include "supervisor_attempt.h"

namespace grpo::supervise {

using core::Overloaded;

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;
using nlohmann::json;

std::int64_t newest_checkpoint_on_disk(const fs::path& run_dir) {
  const auto newest = io::newest_committed_checkpoint(run_dir / core::run_dir::kCheckpoints);
  return newest ? newest->first : -1;
}

// --- the loop -------------------------------------------------------------------------------

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

}  // namespace

core::Result<std::unique_ptr<Supervisor>> Supervisor::open(SupervisorOptions options,
                                                           SupervisorDeps deps) {
  std::error_code ec;
  fs::create_directories(options.run_dir, ec);
  const fs::path log = options.run_dir / core::run_dir::kEvents;
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
  for (const auto& n : o_.exclude) {
    exclude(n);
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
  if (o_.config.contract == TrainerContract::kEmbedded && micro_batch() > 0) {
    spec.argv.push_back("--set");
    spec.argv.push_back(std::string(kMicroBatchKey) + "=" + std::to_string(micro_batch()));
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
  spec.log_dir = o_.run_dir / core::run_dir::kLogs / core::run_dir::attempt_log_dir(attempt);
  return spec;
}

Context Supervisor::policy_context(const Attempt& a) const {
  Context c;
  c.under_slurm = d_.job.under_slurm();
  c.nodes = a.spec.nodes;
  c.excluded = excluded_;
  c.micro_batch = std::max(1, micro_batch());
  c.offload = offload();
  c.offload_supported = o_.config.offload_supported;
  c.made_progress = a.checkpoint_on_disk > a.resume_step;
  // Shrinking: how many nodes would still run without one more node.
  const int min_nodes = o_.config.min_nodes > 0 ? o_.config.min_nodes : o_.nodes;
  const auto alloc = d_.job.allocation_nodes();
  int available = alloc.empty() ? a.spec.nodes : 0;
  for (const auto& n : alloc) {
    if (!is_excluded(n)) ++available;
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
    const int available = available_nodes();
    const int nodes = std::max(1, usable_nodes(available));
    const std::vector<std::string> hosts = attempt_hosts(nodes);
    if (d_.health) {
      GRPO_TRY(const auto verdict, check_nodes(number, hosts));
      if (const int* code = std::get_if<int>(&verdict)) return *code;
      if (std::get<bool>(verdict)) continue;  // nodes excluded: pick (and check) nodes again
    }
    Attempt a(number, make_spec(number, nodes, resume), d_.clock.now(), resume, o_.config);
    a.last_node_check = a.start;
    a.hosts = hosts;
    GRPO_TRY_STATUS(
        record(ev::kAttemptStarted,
               {{"attempt", number},
                {"world_size", a.spec.world_size()},
                {"nodes", nodes},
                {"hosts", hosts},
                {"spares", std::max(0, available - nodes)},
                {"excluded", excluded_},
                {"micro_batch", micro_batch() > 0 ? json(micro_batch()) : json(nullptr)},
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
    const Failure failure = root_cause(a);
    GRPO_TRY_STATUS(record_failure(a, failure, duration));
    History prior = summary_.history;
    if (!prior.attempts.empty() && prior.attempts.back().attempt == number) {
      prior.attempts.pop_back();
    }
    const Context ctx = policy_context(a);
    GRPO_TRY(const Decision decision, record_decision(a, failure, prior, ctx));
    if (const auto* r = std::get_if<Restart>(&decision)) {
      GRPO_TRY(const std::optional<int> code, restart(*r, number, prior, ctx));
      if (code) return *code;
      continue;
    }
    if (const auto* q = std::get_if<Requeue>(&decision)) {
      GRPO_TRY_STATUS(transition(Trigger::kRequeue, q->reason));
      spdlog::info("requeueing job {}", job_id.value_or("?"));
      return requeue();
    }
    const auto& g = std::get<GiveUp>(decision);
    GRPO_TRY_STATUS(transition(Trigger::kGiveUp, g.reason));
    spdlog::error("giving up: {} (exit {})", g.reason, g.exit_code);
    return finish_run("failed", g.exit_code);
  }
}

bool Supervisor::is_excluded(const std::string& node) const {
  return std::find(excluded_.begin(), excluded_.end(), node) != excluded_.end();
}

void Supervisor::exclude(const std::string& node) {
  if (!is_excluded(node)) excluded_.push_back(node);
}

// The nodes of the allocation not excluded (the profile's count outside Slurm).
int Supervisor::available_nodes() const {
  const auto alloc = d_.job.allocation_nodes();
  if (alloc.empty()) return o_.nodes;
  int available = 0;
  for (const auto& n : alloc) {
    if (!is_excluded(n)) ++available;
  }
  return available;
}

// The first `nodes` nodes of the allocation not excluded (none outside Slurm).
std::vector<std::string> Supervisor::attempt_hosts(int nodes) const {
  std::vector<std::string> hosts;
  for (const auto& n : d_.job.allocation_nodes()) {
    if (static_cast<int>(hosts.size()) == nodes) break;
    if (!is_excluded(n)) hosts.push_back(n);
  }
  return hosts;
}

// The most telling failure seen (failure_priority); under Slurm, a crash whose node Slurm now
// reports down is that node's loss (its peers often report it first, as COMM_ERROR).
Failure Supervisor::root_cause(const Attempt& a) {
  std::optional<Failure> failure;
  for (const auto& f : a.candidates) {
    if (!failure || failure_priority(f) > failure_priority(*failure)) failure = f;
  }
  if (!failure) failure = RankCrash{-1, process::shell_code(*a.exit), 0, "the step failed"};
  if (d_.job.under_slurm() && !std::holds_alternative<FatalError>(*failure) &&
      !std::holds_alternative<Preemption>(*failure) &&
      !std::holds_alternative<NodeLoss>(*failure)) {
    auto bad = d_.job.unhealthy_nodes(a.hosts);
    if (bad.ok() && !bad->empty()) failure = NodeLoss{bad->front()};
  }
  return *failure;
}

core::Status Supervisor::record_failure(const Attempt& a, const Failure& failure, double duration) {
  const bool preempted = std::holds_alternative<Preemption>(failure);
  if (summary_.state != RunState::kStopping) {
    GRPO_TRY_STATUS(
        transition(preempted ? Trigger::kPreemption : Trigger::kFailure, describe(failure)));
  }
  json ff = failure_fields(failure);
  ff["attempt"] = a.number;
  spdlog::warn("attempt {} failed: {}", a.number, describe(failure));
  GRPO_TRY_STATUS(record(ev::kFailure, ff));
  return record(ev::kAttemptEnded, {{"attempt", a.number},
                                    {"outcome", preempted ? "preempted" : "failed"},
                                    {"class", std::string(failure_class(failure))},
                                    {"exit", process::describe(*a.exit)},
                                    {"duration_s", duration}});
}

core::Result<Decision> Supervisor::record_decision(const Attempt& a, const Failure& failure,
                                                   const History& prior, const Context& ctx) {
  const Decision decision = decide(failure, prior, o_.config.budget, ctx);
  json dj = decision_fields(decision);
  dj["attempt"] = a.number;
  dj["restarts_spent"] = prior.restarts_spent();
  dj["max_restarts"] = o_.config.budget.max_restarts;
  spdlog::info("decision: {} ({})", dj["kind"].get<std::string>(), dj["reason"].get<std::string>());
  GRPO_TRY_STATUS(record(ev::kDecision, dj));
  return decision;
}

core::Result<std::optional<int>> Supervisor::restart(const Restart& r, int number,
                                                     const History& prior, const Context& ctx) {
  GRPO_TRY_STATUS(transition(Trigger::kRestart, r.reason));
  if (r.remediation) {
    json rj = {{"what", r.remediation->what}, {"attempt", number}};
    if (r.remediation->micro_batch) {
      rj["micro_batch"] = *r.remediation->micro_batch;
      rj["previous_micro_batch"] = micro_batch();
    }
    if (r.remediation->offload) {
      rj["offload"] = *r.remediation->offload;
    }
    spdlog::warn("remediation: {}", r.remediation->what);
    // The new micro batch and offload take effect through the fold (apply_event).
    GRPO_TRY_STATUS(record(ev::kRemediation, rj));
  }
  for (const auto& n : r.exclude) {
    exclude(n);
  }
  // The backoff; a signal during it means the job must yield now.
  const double until = d_.clock.now() + r.delay_s;
  std::optional<int> sig;
  while (d_.clock.now() < until && !sig) {
    tick(false);
    d_.clock.sleep(std::min(0.1, until - d_.clock.now()));
    sig = d_.signals.take();
  }
  if (!sig) return std::optional<int>{};
  const Preemption p{process::signal_name(*sig) + " during the restart backoff"};
  spdlog::warn("{}", describe(Failure{p}));
  const Decision d2 = decide(p, prior, o_.config.budget, ctx);
  GRPO_TRY_STATUS(transition(Trigger::kLaunch, "attempt " + std::to_string(number + 1)));
  GRPO_TRY_STATUS(transition(Trigger::kPreemption, describe(Failure{p})));
  if (const auto* g = std::get_if<GiveUp>(&d2)) {
    json dj = decision_fields(*g);
    dj["attempt"] = number;
    GRPO_TRY_STATUS(record(ev::kDecision, dj));
    GRPO_TRY_STATUS(transition(Trigger::kGiveUp, g->reason));
    GRPO_TRY(const int code, finish_run("failed", g->exit_code));
    return std::optional<int>{code};
  }
  json dj = decision_fields(Requeue{describe(Failure{p})});
  dj["attempt"] = number;
  GRPO_TRY_STATUS(record(ev::kDecision, dj));
  GRPO_TRY_STATUS(transition(Trigger::kRequeue, describe(Failure{p})));
  GRPO_TRY(const int code, requeue());
  return std::optional<int>{code};
}

// The run ends `requeued` and asks Slurm to requeue the job (its next supervisor continues).
core::Result<int> Supervisor::requeue() {
  GRPO_TRY(const int code, finish_run("requeued", kExitRequeue));
  if (auto st = d_.job.requeue(); !st.ok()) {
    spdlog::error("scontrol requeue failed: {}; the job ends with exit {}", st.error().message,
                  kExitRequeue);
  }
  return code;
}

core::Result<int> Supervisor::finish_run(const char* state, int code) {
  GRPO_TRY_STATUS(record(ev::kRunFinished, {{"state", state}, {"exit_code", code}}));
  tick(true);
  d_.status.finish(summary_, d_.clock.wall());
  return code;
}

}  // namespace grpo::supervise
