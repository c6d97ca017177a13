#include "grpo/supervise/monitor.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <limits>

#include "grpo/core/overloaded.h"
#include "grpo/core/telemetry_events.h"

namespace grpo::supervise {

using core::Overloaded;

using nlohmann::json;

namespace {

constexpr std::size_t kStepWindow = 20;
constexpr std::size_t kComputeWindow = 8;

template <typename T>
std::optional<T> get(const json& e, const char* key) {
  if (!e.is_object() || !e.contains(key)) return std::nullopt;
  try {
    return e.at(key).get<T>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

// The median of every element of ascending `s` except the one at index `p` (the others of one
// rank), in O(1): others[i] is s[i] below p and s[i + 1] from p on. Equal values are
// interchangeable, so any index of the rank's value gives the same multiset.
double median_without(const std::vector<double>& s, std::size_t p) {
  const std::size_t m = s.size() - 1;
  if (m == 0) return 0;
  auto other = [&](std::size_t i) { return i < p ? s[i] : s[i + 1]; };
  return m % 2 == 1 ? other(m / 2) : 0.5 * (other(m / 2 - 1) + other(m / 2));
}

}  // namespace

void RunTimings::add_step(double wall_s) {
  if (!(wall_s >= 0) || std::isinf(wall_s)) return;
  steps_.push_back(wall_s);
  while (steps_.size() > kStepWindow) steps_.pop_front();
  longest_ = *std::max_element(steps_.begin(), steps_.end());
}

void RunTimings::add_checkpoint(double seconds) {
  if (seconds >= 0 && !std::isinf(seconds)) checkpoint_s_ = std::max(checkpoint_s_, seconds);
}

std::optional<double> RunTimings::longest_step() const {
  if (steps_.empty()) return std::nullopt;
  return longest_;
}

double steady_hang_timeout(const HangOptions& o, const RunTimings& t) {
  if (o.timeout_s) return *o.timeout_s;
  const auto s = t.longest_step();
  if (!s) return o.startup_s;
  return std::max(o.min_s, o.step_factor * *s);
}

PhaseLimit phase_timeout(PhaseClass c, const HangOptions& o, const RunTimings& t) {
  const double steady = steady_hang_timeout(o, t);
  double floor_s = o.timeout_s.value_or(o.phases.floor_s);
  double default_s = steady;
  if (c == PhaseClass::kStartup) {
    floor_s = o.startup_s;
    default_s = std::max(steady, o.startup_s);
  } else if (c == PhaseClass::kCheckpoint) {
    floor_s = o.phases.checkpoint_floor_s;
    default_s = steady + std::max(o.checkpoint_min_s, o.checkpoint_factor * t.longest_checkpoint());
  }
  return phase_limit(c, o.phases, t.phases(), floor_s, default_s);
}

std::map<PhaseClass, double> calibrated_timeouts(const HangOptions& o, const RunTimings& t) {
  std::map<PhaseClass, double> out;
  for (int i = 0; i < kPhaseClasses; ++i) {
    const auto c = static_cast<PhaseClass>(i);
    const PhaseLimit l = phase_timeout(c, o, t);
    if (l.source == LimitSource::kCalibrated) out[c] = l.seconds;
  }
  return out;
}

std::optional<double> compute_seconds(const json& e) {
  const auto step_s = get<double>(e, "step_s");
  if (!step_s) return std::nullopt;
  const double comm = get<double>(e, "comm_s").value_or(0.0);
  return std::max(0.0, *step_s - comm);
}

AttemptMonitor::AttemptMonitor(int world_size, double start_time, HangOptions hang,
                               StragglerOptions straggler, bool heartbeats_required)
    : world_(std::max(1, world_size)),
      start_(start_time),
      hang_(hang),
      straggler_(straggler),
      heartbeats_required_(heartbeats_required),
      ranks_(static_cast<std::size_t>(world_)),
      last_checkpoint_(start_time) {
  for (auto& r : ranks_) r.last_beat = start_time;
}

std::optional<Straggler> AttemptMonitor::observe(int rank, const json& event, double now,
                                                 RunTimings& timings) {
  if (rank < 0 || rank >= world_) return std::nullopt;
  Rank& r = ranks_[static_cast<std::size_t>(rank)];
  const std::string type = get<std::string>(event, "type").value_or("");
  // The silence this event ends is a sample of the class the rank was in (warm-up excepted).
  const PhaseClass before = class_of(r);
  if (now >= r.last_beat &&
      (before == PhaseClass::kStartup || r.steps >= hang_.phases.warmup_steps)) {
    timings.phases().add(before, now - r.last_beat);
  }
  r.last_beat = std::max(r.last_beat, now);
  if (type == core::telemetry::event::kHeartbeat) {
    mark_reported(r);
    if (auto phase = get<std::string>(event, "phase"); phase && *phase != r.phase) {
      r.phase = std::move(*phase);
      r.cls = phase_class_of(r.phase);
    }
  } else if (type == core::telemetry::event::kStep) {
    mark_reported(r);
    r.first_step = true;
    ++r.steps;
    r.phase = "step";
    r.cls = phase_class_of(r.phase);
    r.step = std::max(r.step, get<std::int64_t>(event, "step").value_or(r.step));
    if (auto w = get<double>(event, "wall_s")) {
      timings.add_step(*w);
    } else if (auto s = get<double>(event, "step_s")) {
      timings.add_step(*s);
    }
    if (auto c = compute_seconds(event)) {
      const std::int64_t step = r.step;
      auto it = std::find_if(compute_.begin(), compute_.end(),
                             [&](const auto& p) { return p.first == step; });
      if (it == compute_.end()) {
        compute_.emplace_back(step, StepCompute{std::vector<double>(
                                        ranks_.size(), std::numeric_limits<double>::quiet_NaN())});
        it = std::prev(compute_.end());
        while (compute_.size() > kComputeWindow) {
          compute_.erase(compute_.begin());
          it = std::prev(compute_.end());
        }
      }
      double& slot = it->second.seconds[static_cast<std::size_t>(rank)];
      if (std::isnan(slot)) ++it->second.reported;
      slot = *c;
      if (it->second.reported < world_) return std::nullopt;
      return check_straggler(step);
    }
  } else if (type == core::telemetry::event::kCheckpointSaved) {
    if (auto s = get<double>(event, "seconds")) timings.add_checkpoint(*s);
    last_checkpoint_ = now;
  } else if (type == core::telemetry::event::kDone) {
    r.done = true;
    // The step it finished at (a rank resumed at the last step reports no step event).
    r.step = std::max(r.step, get<std::int64_t>(event, "step").value_or(r.step));
  }
  return std::nullopt;
}

std::optional<Straggler> AttemptMonitor::check_straggler(std::int64_t step) {
  auto it = std::find_if(compute_.begin(), compute_.end(),
                         [&](const auto& p) { return p.first == step; });
  if (it == compute_.end() || world_ < 2) return std::nullopt;
  const auto& c = it->second.seconds;
  if (it->second.reported < world_) return std::nullopt;
  // One sort per step (not one per rank): rank r's value sits at `at[r]` in `sorted`.
  std::vector<std::size_t> order(c.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return c[a] < c[b]; });
  std::vector<double> sorted(c.size());
  std::vector<std::size_t> at(c.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    sorted[i] = c[order[i]];
    at[order[i]] = i;
  }
  std::optional<Straggler> found;
  for (int r = 0; r < world_; ++r) {
    const double m = median_without(sorted, at[static_cast<std::size_t>(r)]);
    const double mine = c[static_cast<std::size_t>(r)];
    Rank& rk = ranks_[static_cast<std::size_t>(r)];
    const bool slow =
        mine > m * (1.0 + straggler_.rel_margin) && mine - m > straggler_.abs_margin_s;
    if (!slow) {
      rk.slow_streak = 0;
      rk.straggling = false;
      continue;
    }
    ++rk.slow_streak;
    if (rk.slow_streak >= straggler_.consecutive && !rk.straggling && !found) {
      rk.straggling = true;
      found = Straggler{r, step, mine, m, rk.slow_streak};
    }
  }
  compute_.erase(it);
  return found;
}

PhaseClass AttemptMonitor::class_of(const Rank& r) const {
  return r.first_step ? r.cls : PhaseClass::kStartup;
}

PhaseClass AttemptMonitor::phase_class(int rank) const {
  if (rank < 0 || rank >= world_) return PhaseClass::kStartup;
  return class_of(ranks_[static_cast<std::size_t>(rank)]);
}

double AttemptMonitor::timeout_for(int rank, const RunTimings& timings) const {
  return phase_timeout(phase_class(rank), hang_, timings).seconds;
}

std::optional<Hang> AttemptMonitor::check_hang(double now, const RunTimings& timings) const {
  Hang h;
  if (!heartbeats_required_ && !any_heartbeat()) {
    // A trainer without heartbeats: progress is a new checkpoint.
    const auto limit = hang_.checkpoint_progress_s ? hang_.checkpoint_progress_s : hang_.timeout_s;
    if (!limit) return std::nullopt;
    const double silent = now - last_checkpoint_;
    if (silent <= *limit) return std::nullopt;
    for (int r = 0; r < world_; ++r) {
      if (!ranks_[static_cast<std::size_t>(r)].done) h.ranks.push_back(r);
    }
    h.silent_s = silent;
    h.timeout_s = *limit;
    return h;
  }
  const auto limits = class_limits(timings);
  for (int r = 0; r < world_; ++r) {
    const Rank& rk = ranks_[static_cast<std::size_t>(r)];
    if (rk.done) continue;
    const double limit = limits[static_cast<std::size_t>(class_of(rk))];
    const double silent = now - rk.last_beat;
    if (silent > limit) {
      h.ranks.push_back(r);
      if (silent > h.silent_s) {
        h.silent_s = silent;
        h.timeout_s = limit;
        h.phase = std::string(to_string(class_of(rk)));
        h.trainer_phase = rk.phase == "step" ? "" : rk.phase;
      }
    }
  }
  if (h.ranks.empty()) return std::nullopt;
  return h;
}

bool AttemptMonitor::stalled(double now, const RunTimings& timings) const {
  if (!heartbeats_required_ && !any_heartbeat()) return false;
  const auto limits = class_limits(timings);
  for (const Rank& rk : ranks_) {
    if (!rk.done && now - rk.last_beat > 0.5 * limits[static_cast<std::size_t>(class_of(rk))]) {
      return true;
    }
  }
  return false;
}

std::array<double, kPhaseClasses> AttemptMonitor::class_limits(const RunTimings& timings) const {
  std::array<double, kPhaseClasses> out{};
  for (int i = 0; i < kPhaseClasses; ++i) {
    out[static_cast<std::size_t>(i)] =
        phase_timeout(static_cast<PhaseClass>(i), hang_, timings).seconds;
  }
  return out;
}

void AttemptMonitor::mark_reported(Rank& r) {
  if (!r.reported) ++reported_;
  r.reported = true;
}

bool AttemptMonitor::all_reported() const {
  return reported_ == world_;
}

std::int64_t AttemptMonitor::min_step() const {
  std::int64_t m = std::numeric_limits<std::int64_t>::max();
  for (const auto& r : ranks_) m = std::min(m, r.step);
  return ranks_.empty() ? 0 : m;
}

std::int64_t AttemptMonitor::max_step() const {
  std::int64_t m = 0;
  for (const auto& r : ranks_) m = std::max(m, r.step);
  return m;
}

bool AttemptMonitor::rank_done(int rank) const {
  return rank >= 0 && rank < world_ && ranks_[static_cast<std::size_t>(rank)].done;
}

bool AttemptMonitor::any_heartbeat() const {
  return reported_ > 0;
}

// --- classification -------------------------------------------------------------------------

std::optional<Failure> failure_from_event(int rank, const json& e) {
  const std::string type = get<std::string>(e, "type").value_or("");
  const std::string message = get<std::string>(e, "message").value_or("");
  if (type == core::telemetry::event::kOomError) {
    OutOfMemory o;
    o.rank = rank;
    o.source = "trainer";
    o.phase = get<std::string>(e, "phase").value_or("");
    o.requested_bytes = get<std::int64_t>(e, "requested_bytes");
    return Failure{o};
  }
  if (type == core::telemetry::event::kCommError) return Failure{CommFailure{rank, message}};
  if (type == core::telemetry::event::kIoError) {
    if (get<bool>(e, "no_space").value_or(false)) return Failure{DiskFull{rank, message}};
    return Failure{RankCrash{rank, 3, 0, "I/O error: " + message}};
  }
  if (type == core::telemetry::event::kInternalError)
    return Failure{RankCrash{rank, 1, 0, message}};
  if (type == core::telemetry::event::kError) {
    const std::string code = get<std::string>(e, "code").value_or("");
    if (code == core::telemetry::error_code::kConfig)
      return Failure{FatalError{2, "configuration error: " + message}};
    if (code == core::telemetry::error_code::kComm ||
        code == core::telemetry::error_code::kBootstrap) {
      return Failure{CommFailure{rank, code + ": " + message}};
    }
    return Failure{RankCrash{rank, 3, 0, (code.empty() ? "error" : code) + ": " + message}};
  }
  return std::nullopt;
}

std::optional<Failure> failure_from_exit(int rank, const ExitStatus& status,
                                         TrainerContract contract, bool stop_requested,
                                         bool oom_evidence) {
  return std::visit(
      Overloaded{
          [&](const Exited& e) -> std::optional<Failure> {
            if (e.code == 0) return std::nullopt;
            if (contract == TrainerContract::kEmbedded) {
              switch (e.code) {
                case 2:
                  return Failure{FatalError{2, "rank " + std::to_string(rank) +
                                                   " exited with code 2 (configuration error)"}};
                case 4:
                  return Failure{CommFailure{rank, "exit code 4"}};
                case 5: {
                  OutOfMemory o;
                  o.rank = rank;
                  o.source = "trainer";
                  return Failure{o};
                }
                case 7:
                  if (stop_requested) return std::nullopt;
                  return Failure{Preemption{"the trainer stopped on request (exit 7)"}};
                default:
                  break;
              }
            }
            if (e.code > 128 && e.code < 160) {  // a shell's 128 + signal
              return Failure{RankCrash{rank, e.code, e.code - 128, ""}};
            }
            return Failure{RankCrash{rank, e.code, 0, ""}};
          },
          [&](const Signaled& s) -> std::optional<Failure> {
            if (s.signal == SIGKILL && oom_evidence) {
              OutOfMemory o;
              o.rank = rank;
              o.source = "kernel";
              return Failure{o};
            }
            return Failure{RankCrash{rank, 128 + s.signal, s.signal, ""}};
          },
      },
      status);
}

std::optional<Failure> failure_from_note(const RunnerNote& note) {
  switch (note.kind) {
    case NoteKind::kNodeFailure:
      return Failure{NodeLoss{note.node.value_or("?")}};
    case NoteKind::kOutOfMemory: {
      OutOfMemory o;
      o.rank = note.rank.value_or(-1);
      o.source = "slurm";
      return Failure{o};
    }
    case NoteKind::kLaunchFailed:
      return Failure{RankCrash{note.rank.value_or(-1), 0, 0, note.text}};
    case NoteKind::kInfo:
      return std::nullopt;
  }
  return std::nullopt;
}

int failure_priority(const Failure& f) {
  return std::visit(
      Overloaded{[](const FatalError&) { return 6; }, [](const DiskFull&) { return 6; },
                 [](const Preemption&) { return 5; }, [](const NodeLoss&) { return 4; },
                 [](const OutOfMemory&) { return 3; }, [](const Hang&) { return 2; },
                 [](const RankCrash&) { return 1; }, [](const Incomplete&) { return 1; },
                 [](const CommFailure&) { return 0; }},
      f);
}

}  // namespace grpo::supervise
