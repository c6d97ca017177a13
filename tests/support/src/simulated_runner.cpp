#include "grpo/test_support/simulated_runner.h"

#include <algorithm>
#include <csignal>

#include "grpo/core/json_text.h"
#include "grpo/core/overloaded.h"

namespace grpo::supervise {

using core::Overloaded;

using nlohmann::json;

void sim_emit(SimAttempt& a, double at, int rank, json event) {
  a.actions.push_back(SimAction{at, rank, SimEmit{std::move(event)}});
}

SimAttempt sim_trainer(int world, std::int64_t from, std::int64_t total, double step_s,
                       int save_freq, double t0) {
  SimAttempt a;
  for (int r = 0; r < world; ++r) {
    sim_emit(a, t0, r, {{"type", "start"}, {"rank", r}, {"world_size", world}});
  }
  for (std::int64_t s = from + 1; s <= total; ++s) {
    const double begin = t0 + static_cast<double>(s - from - 1) * step_s + 0.001;
    const double end = t0 + static_cast<double>(s - from) * step_s;
    for (int r = 0; r < world; ++r) {
      sim_emit(a, begin, r, {{"type", "heartbeat"}, {"step", s}, {"phase", "start"}, {"rank", r}});
      sim_emit(a, end, r,
               {{"type", "step"},
                {"step", s},
                {"rank", r},
                {"step_s", step_s},
                {"wall_s", step_s},
                {"reward_mean", 0.5},
                {"tokens_per_s", 1000.0},
                {"peak_rss_mib", 300.0}});
    }
    if ((save_freq > 0 && s % save_freq == 0) || s == total) {
      for (int r = 0; r < world; ++r) {
        sim_emit(a, end + 0.0005, r,
                 {{"type", "heartbeat"}, {"step", s}, {"phase", "checkpoint"}, {"rank", r}});
      }
      sim_emit(a, end + 0.001, 0,
               {{"type", "checkpoint_saved"},
                {"step", s},
                {"rank", 0},
                {"seconds", 0.05},
                {"reason", s == total ? "final" : "periodic"}});
    }
    if (s == total) {
      for (int r = 0; r < world; ++r) {
        sim_emit(a, end + 0.002, r,
                 {{"type", "done"}, {"step", s}, {"rank", r}, {"weights_sha256", "sha-final"}});
        a.actions.push_back(SimAction{end + 0.003, r, SimExit{Exited{0}}});
      }
    }
  }
  return a;
}

void sim_fault(SimAttempt& a, int rank, std::int64_t step, std::optional<ExitStatus> status,
               double extra_s) {
  double cut = -1;
  for (const auto& act : a.actions) {
    if (act.rank != rank) continue;
    if (const auto* e = std::get_if<SimEmit>(&act.what)) {
      if (e->event.value("type", "") == "heartbeat" && e->event.value("step", -1) == step &&
          e->event.value("phase", "") == "start") {
        cut = act.at;
        break;
      }
    }
  }
  if (cut < 0) return;
  int world = 0;
  for (const auto& act : a.actions) world = std::max(world, act.rank + 1);
  a.actions.erase(std::remove_if(a.actions.begin(), a.actions.end(),
                                 [&](const SimAction& x) { return x.at > cut; }),
                  a.actions.end());
  if (!status) return;  // a hang: everyone falls silent (the peers wait in a collective)
  a.actions.push_back(SimAction{cut + extra_s, rank, SimExit{*status}});
  for (int r = 0; r < world; ++r) {
    if (r == rank) continue;
    sim_emit(a, cut + extra_s + 0.05, r,
             {{"type", "COMM_ERROR"},
              {"step", step},
              {"rank", r},
              {"phase", "update"},
              {"message", "Connection closed by peer"},
              {"exit_code", 4}});
    a.actions.push_back(SimAction{cut + extra_s + 0.051, r, SimExit{Exited{4}}});
  }
}

core::Status SimulatedRunner::start(const AttemptSpec& spec) {
  if (active_) return core::make_error(core::ErrorKind::kInternal, "an attempt is still running");
  if (script_.empty()) {
    return core::make_error(core::ErrorKind::kInternal, "simulated runner: no script for attempt " +
                                                            std::to_string(spec.attempt));
  }
  current_ = std::move(script_.front());
  script_.pop_front();
  started_.push_back(spec);
  if (current_.start_error) return *current_.start_error;
  const double t = clock_.now();
  pending_.clear();
  for (const auto& act : current_.actions) {
    pending_.push_back(Pending{t + act.at, act.rank, act.what, order_++});
  }
  alive_.assign(static_cast<std::size_t>(spec.world_size()), true);
  first_bad_.reset();
  newest_step_ = 0;
  active_ = true;
  return core::ok_status();
}

void SimulatedRunner::finish_if_all_gone(std::vector<AttemptEvent>& out) {
  if (!active_) return;
  if (std::any_of(alive_.begin(), alive_.end(), [](bool b) { return b; })) return;
  out.emplace_back(std::in_place_type<AttemptExit>, AttemptExit{first_bad_.value_or(Exited{0})});
  active_ = false;
  pending_.clear();
}

core::Result<std::vector<AttemptEvent>> SimulatedRunner::poll(double timeout_s) {
  std::vector<AttemptEvent> out;
  if (!active_) {
    clock_.advance(timeout_s);
    return out;
  }
  const double limit = clock_.now() + std::max(0.0, timeout_s);
  double next = limit;
  for (const auto& p : pending_) next = std::min(next, p.at);
  clock_.set(next);
  if (next >= limit && std::none_of(pending_.begin(), pending_.end(),
                                    [&](const Pending& p) { return p.at <= next; })) {
    return out;
  }
  std::vector<Pending> due;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->at <= next) {
      due.push_back(*it);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(due.begin(), due.end(), [](const Pending& a, const Pending& b) {
    return a.at != b.at ? a.at < b.at : a.order < b.order;
  });
  for (auto& p : due) {
    const auto r = static_cast<std::size_t>(p.rank);
    if (r >= alive_.size() || !alive_[r]) continue;
    std::visit(
        Overloaded{
            [&](const SimEmit& e) {
              if (e.event.value("type", "") == "step") {
                newest_step_ = std::max(newest_step_, e.event.value("step", std::int64_t{0}));
              }
              out.emplace_back(std::in_place_type<RankOutput>,
                               RankOutput{p.rank, core::json_text(e.event), std::nullopt});
            },
            [&](const SimExit& x) {
              alive_[r] = false;
              if (process::shell_code(x.status) != 0 && !first_bad_) first_bad_ = x.status;
              RankExit re{p.rank, x.status, std::nullopt, x.oom_killed};
              out.emplace_back(std::in_place_type<RankExit>, re);
            },
            [&](const RunnerNote& n) { out.emplace_back(std::in_place_type<RunnerNote>, n); },
        },
        p.what);
  }
  finish_if_all_gone(out);
  return out;
}

core::Status SimulatedRunner::signal(int sig) {
  if (!active_) return core::ok_status();
  signals_.emplace_back(started_.back().attempt, sig);
  const double t = clock_.now();
  if (sig == SIGUSR2 && current_.checkpoint_on_usr2 && !alive_.empty() && alive_[0]) {
    pending_.push_back(Pending{t + *current_.checkpoint_on_usr2, 0,
                               SimEmit{{{"type", "checkpoint_saved"},
                                        {"step", newest_step_},
                                        {"rank", 0},
                                        {"seconds", 0.05},
                                        {"reason", "request"}}},
                               order_++});
  }
  if (sig == SIGUSR1) {
    for (const auto& [rank, event] : current_.stack_on_usr1) {
      if (rank < 0 || rank >= static_cast<int>(alive_.size()) ||
          !alive_[static_cast<std::size_t>(rank)]) {
        continue;
      }
      pending_.push_back(Pending{t + current_.stack_delay, rank, SimEmit{event}, order_++});
    }
  }
  if ((sig == SIGTERM || sig == SIGINT) && current_.term_delay) {
    pending_.erase(
        std::remove_if(pending_.begin(), pending_.end(),
                       [](const Pending& p) { return std::holds_alternative<SimExit>(p.what); }),
        pending_.end());
    for (std::size_t r = 0; r < alive_.size(); ++r) {
      if (alive_[r]) {
        pending_.push_back(Pending{t + *current_.term_delay, static_cast<int>(r),
                                   SimExit{current_.on_term}, order_++});
      }
    }
  }
  return core::ok_status();
}

core::Status SimulatedRunner::kill() {
  if (!active_) return core::ok_status();
  signals_.emplace_back(started_.back().attempt, SIGKILL);
  // The effect shows at the next poll, as with real processes.
  pending_.clear();
  for (std::size_t r = 0; r < alive_.size(); ++r) {
    if (alive_[r]) {
      pending_.push_back(
          Pending{clock_.now(), static_cast<int>(r), SimExit{Signaled{SIGKILL}}, order_++});
    }
  }
  return core::ok_status();
}

std::vector<std::string> SimulatedRunner::nodes() const {
  return {"sim"};
}

}  // namespace grpo::supervise
