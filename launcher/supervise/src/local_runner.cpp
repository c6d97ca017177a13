#include "grpo/supervise/local_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace grpo::supervise {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

double mono() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool is_zero(const ExitStatus& s) {
  const auto* e = std::get_if<Exited>(&s);
  return e != nullptr && e->code == 0;
}

void write_line(int fd, const std::string& line) {
  if (fd < 0) return;
  const std::string l = line + "\n";
  (void)!::write(fd, l.data(), l.size());
}

}  // namespace

LocalRunner::~LocalRunner() {
  for (auto& r : ranks_) {
    if (r.child && !r.child->reaped()) r.child->signal_group(SIGKILL);
  }
  ranks_.clear();  // ~Child reaps
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
  GRPO_TRY_STATUS(make_log_dir(spec.log_dir));
  GRPO_TRY(port_, free_local_port());
  const int world = spec.world_size();
  ranks_.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    ChildSpec c;
    c.argv = spec.argv;
    c.env = spec.env;
    c.env["RANK"] = std::to_string(r);
    c.env["LOCAL_RANK"] = std::to_string(r % spec.ranks_per_node);
    c.env["WORLD_SIZE"] = std::to_string(world);
    c.env["LOCAL_WORLD_SIZE"] = std::to_string(spec.ranks_per_node);
    c.env["GROUP_RANK"] = std::to_string(r / spec.ranks_per_node);
    c.env["NODE_RANK"] = std::to_string(r / spec.ranks_per_node);
    c.env["ROLE_RANK"] = std::to_string(r);
    c.env["MASTER_ADDR"] = "127.0.0.1";
    c.env["MASTER_PORT"] = std::to_string(port_);
    c.env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(spec.attempt - 1);
    // Never let a rank take a PMIx or Slurm step identity from our own environment.
    c.unset_env = {"PMIX_NAMESPACE",   "PMIX_RANK",         "PMIX_SERVER_URI2", "PMIX_SERVER_URI3",
                   "PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "PMIX_SERVER_URI21"};
    const fs::path log = spec.log_dir / ("rank-" + std::to_string(r) + ".log");
    c.stderr_file = log;
    auto child = Child::spawn(c);
    if (!child.ok()) {
      for (auto& started : ranks_) {
        if (started.child) started.child->signal_group(SIGKILL);
      }
      ranks_.clear();
      return child.error();
    }
    Rank& rk = ranks_[static_cast<std::size_t>(r)];
    rk.child = std::move(child).value();
    rk.log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    rk.oom = oom_snapshot(rk.child->pid());
  }
  active_ = true;
  return core::ok_status();
}

void LocalRunner::drain(Rank& r, int rank, std::vector<AttemptEvent>& events) {
  if (r.child->out_fd() < 0) return;
  std::vector<std::string> lines;
  const bool open = r.out.read_from(r.child->out_fd(), lines);
  for (auto& l : lines) {
    if (l.empty() || l.front() != '{') write_line(r.log_fd, l);
    events.emplace_back(std::in_place_type<RankOutput>, RankOutput{rank, std::move(l)});
  }
  if (!open) r.child->close_out();
}

core::Result<std::vector<AttemptEvent>> LocalRunner::poll(double timeout_s) {
  std::vector<AttemptEvent> events;
  if (!active_) {
    if (timeout_s > 0) ::usleep(static_cast<useconds_t>(timeout_s * 1e6));
    return events;
  }
  const double deadline = mono() + std::max(0.0, timeout_s);
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
        if (!is_zero(*st) && !first_bad_) first_bad_ = *st;
        events.emplace_back(std::in_place_type<RankExit>, x);
        r.reported = true;
      }
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
    const double left = deadline - mono();
    if (!events.empty() || left <= 0) return events;
    std::vector<pollfd> fds;
    for (const auto& r : ranks_) {
      if (r.child->out_fd() >= 0) fds.push_back(pollfd{r.child->out_fd(), POLLIN, 0});
    }
    // Short slices: a rank's end shows in waitpid, not on a descriptor.
    const int ms = static_cast<int>(std::min(left, 0.01) * 1000) + 1;
    if (fds.empty()) {
      ::usleep(static_cast<useconds_t>(ms) * 1000);
    } else {
      (void)::poll(fds.data(), fds.size(), ms);
    }
  }
}

core::Status LocalRunner::signal(int sig) {
  for (auto& r : ranks_) {
    if (r.child && !r.child->reaped()) r.child->signal_group(sig);
  }
  return core::ok_status();
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
