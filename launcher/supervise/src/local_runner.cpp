#include "grpo/supervise/local_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "grpo/core/standby_go.h"
#include "grpo/supervise/clock.h"
#include "grpo/supervise/output_parsing.h"

namespace grpo::supervise {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

// The torchrun variables of `rank` in `spec`, and the attempt's environment.
std::map<std::string, std::string> rank_env(const AttemptSpec& spec, int r, int port) {
  std::map<std::string, std::string> env = spec.env;
  env["RANK"] = std::to_string(r);
  env["LOCAL_RANK"] = std::to_string(r % spec.ranks_per_node);
  env["WORLD_SIZE"] = std::to_string(spec.world_size());
  env["LOCAL_WORLD_SIZE"] = std::to_string(spec.ranks_per_node);
  env["GROUP_RANK"] = std::to_string(r / spec.ranks_per_node);
  env["NODE_RANK"] = std::to_string(r / spec.ranks_per_node);
  env["ROLE_RANK"] = std::to_string(r);
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(port);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(spec.attempt - 1);
  return env;
}

LocalRunner::~LocalRunner() {
  for (auto& r : ranks_) {
    if (r.child && !r.child->reaped()) r.child->signal_group(SIGKILL);
  }
  ranks_.clear();  // ~Child reaps
  discard_standbys();
}

void LocalRunner::discard_standbys() {
  for (auto& sb : standbys_) {
    if (!sb.child) continue;  // became a rank of the attempt
    sb.child->close_in();     // EOF: a standby exits 0 at once
    for (int i = 0; i < 50 && !sb.child->try_reap(); ++i) ::usleep(2000);
    std::error_code ec;
    fs::remove(sb.log, ec);
  }
  standbys_.clear();  // ~Child kills and reaps any left
}

void LocalRunner::start_standbys() {
  standbys_started_ = true;
  if (!standby_enabled_) return;
  discard_standbys();
  const fs::path logs = spec_.log_dir.parent_path();
  for (int r = 0; r < spec_.world_size(); ++r) {
    ChildSpec c;
    // grpo-trainer --standby ARGS: it waits for the go on stdin (trainer/src/main.cpp).
    c.argv = spec_.argv;
    c.argv.insert(c.argv.begin() + 1, "--standby");
    c.env = spec_.env;
    c.unset_env = rank_identity_variables();
    c.stdin_pipe = true;
    Standby sb;
    sb.log =
        logs / ("standby-" + std::to_string(spec_.attempt + 1) + "-" + std::to_string(r) + ".log");
    c.stderr_file = sb.log;
    auto child = Child::spawn(c);
    if (!child.ok()) {
      discard_standbys();
      return;
    }
    sb.child = std::move(child).value();
    standbys_.push_back(std::move(sb));
  }
}

void LocalRunner::close_logs() {
  for (auto& r : ranks_) {
    if (r.log_fd >= 0) ::close(r.log_fd);
    r.log_fd = -1;
  }
}

core::Status LocalRunner::start(const AttemptSpec& spec) {
  if (active_) return make_error(ErrorKind::kInternal, "an attempt is still running");
  close_logs();
  ranks_.clear();
  first_bad_.reset();
  standbys_used_ = 0;
  GRPO_TRY_STATUS(make_log_dir(spec.log_dir));
  GRPO_TRY(port_, free_local_port());
  const int world = spec.world_size();
  // Standbys started with this argv that are still waiting can be this attempt's ranks.
  bool use_standbys = standby_enabled_ && !standbys_.empty() && spec_.argv == spec.argv &&
                      static_cast<int>(standbys_.size()) >= world;
  for (const auto& sb : standbys_) use_standbys = use_standbys && !sb.child->try_reap();
  if (!use_standbys) discard_standbys();
  ranks_.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const fs::path log = spec.log_dir / ("rank-" + std::to_string(r) + ".log");
    Rank& rk = ranks_[static_cast<std::size_t>(r)];
    if (use_standbys) {
      Standby& sb = standbys_[static_cast<std::size_t>(r)];
      std::error_code ec;
      fs::rename(sb.log, log, ec);
      // The go (grpo/core/standby_go.h): values with newlines arrive whole.
      const std::string go = core::encode_standby_go(rank_env(spec, r, port_));
      const ssize_t n = ::write(sb.child->in_fd(), go.data(), go.size());
      sb.child->close_in();
      if (n == static_cast<ssize_t>(go.size())) {
        rk.child = std::move(sb.child);
        ++standbys_used_;
      }
    }
    if (!rk.child) {
      ChildSpec c;
      c.argv = spec.argv;
      c.env = rank_env(spec, r, port_);
      c.unset_env = rank_identity_variables();
      c.stderr_file = log;
      auto child = Child::spawn(c);
      if (!child.ok()) {
        for (auto& started : ranks_) {
          if (started.child) started.child->signal_group(SIGKILL);
        }
        ranks_.clear();
        discard_standbys();
        return child.error();
      }
      rk.child = std::move(child).value();
    }
    rk.log_fd = open_log(log);
    rk.oom = oom_snapshot(rk.child->pid(), spec.argv.front());
  }
  if (use_standbys) discard_standbys();  // the unused ones
  spec_ = spec;
  standbys_started_ = false;
  reported_output_.assign(static_cast<std::size_t>(world), false);
  active_ = true;
  return core::ok_status();
}

void LocalRunner::drain(Rank& r, int rank, std::vector<AttemptEvent>& events) {
  if (r.child->out_fd() < 0) return;
  std::vector<std::string> lines;
  const bool open = r.out.read_from(r.child->out_fd(), lines);
  for (auto& l : lines) {
    if (!parse_event_line(l)) write_line(r.log_fd, l);  // not telemetry
    events.emplace_back(std::in_place_type<RankOutput>,
                        RankOutput{rank, std::move(l), std::nullopt});
  }
  if (!lines.empty()) reported_output_[static_cast<std::size_t>(rank)] = true;
  if (!open) r.child->close_out();
}

core::Result<std::vector<AttemptEvent>> LocalRunner::poll(double timeout_s) {
  std::vector<AttemptEvent> events;
  if (!active_) {
    if (timeout_s > 0) ::usleep(static_cast<useconds_t>(timeout_s * 1e6));
    return events;
  }
  const double deadline = SystemClock().now() + std::max(0.0, timeout_s);
  while (true) {
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      drain(r, static_cast<int>(i), events);
      if (r.reported) continue;
      if (auto st = r.child->try_reap()) {
        drain(r, static_cast<int>(i), events);  // what it wrote before it ended
        r.child->close_out();
        const bool sigkill =
            std::holds_alternative<Signaled>(*st) && std::get<Signaled>(*st).signal == SIGKILL;
        RankExit x{static_cast<int>(i), *st, std::nullopt, false};
        if (sigkill) x.oom_killed = oom_killed(r.child->pid(), r.oom);
        if (process::shell_code(*st) != 0 && !first_bad_) first_bad_ = *st;
        events.emplace_back(std::in_place_type<RankExit>, x);
        r.reported = true;
      }
    }
    // Every rank is up and talking: start the next attempt's standbys now, so that they load
    // while this attempt trains rather than while it starts.
    if (!standbys_started_ &&
        std::all_of(reported_output_.begin(), reported_output_.end(), [](bool b) { return b; })) {
      start_standbys();
    }
    const bool all_gone =
        std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.reported; });
    if (all_gone) {
      events.emplace_back(std::in_place_type<AttemptExit>,
                          AttemptExit{first_bad_.value_or(Exited{0})});
      active_ = false;
      close_logs();
      return events;
    }
    const double left = deadline - SystemClock().now();
    if (!events.empty() || left <= 0) return events;
    std::vector<int> fds;
    for (const auto& r : ranks_) fds.push_back(r.child->out_fd());
    wait_readable(fds, left);
  }
}

core::Status LocalRunner::signal(int sig) {
  for (auto& r : ranks_) {
    if (r.child && !r.child->reaped()) r.child->signal_group(sig);
  }
  return core::ok_status();
}

std::vector<std::pair<int, int>> LocalRunner::rank_pids() const {
  std::vector<std::pair<int, int>> out;
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const auto& c = ranks_[i].child;
    if (c && !c->reaped()) out.emplace_back(static_cast<int>(i), static_cast<int>(c->pid()));
  }
  return out;
}

core::Status LocalRunner::kill() {
  for (auto& r : ranks_) {
    if (r.child && !r.child->reaped()) {
      r.child->signal_group(SIGKILL);
    }
  }
  return core::ok_status();
}

}  // namespace grpo::supervise
