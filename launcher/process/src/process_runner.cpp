#include "grpo/process/process_runner.h"
#include "grpo/process/signals.h"
#include "grpo/process/unique_fd.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace grpo::process {

using core::ErrorKind;
using core::make_error;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

ExitStatus from_wait_status(int st) {
  if (WIFSIGNALED(st)) return Signaled{WTERMSIG(st)};
  return Exited{WEXITSTATUS(st)};
}

// posix_spawn's file actions and attributes, released on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    ok_ = posix_spawn_file_actions_init(&actions_) == 0;
    ok_ = ok_ && posix_spawnattr_init(&attr_) == 0;
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  bool ok() const { return ok_; }
  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attr() { return &attr_; }

 private:
  bool ok_ = false;
  posix_spawn_file_actions_t actions_{};
  posix_spawnattr_t attr_{};
};

struct Spawned {
  pid_t pid = -1;
  UniqueFd out;  // read ends of captured streams
  UniqueFd err;
};

core::Result<Spawned> spawn(const CommandSpec& spec, bool allow_capture) {
  if (!allow_capture && (spec.out == Stream::kCapture || spec.err == Stream::kCapture)) {
    return make_error(ErrorKind::kInternal, "start() cannot capture output; use run()");
  }
  GRPO_TRY(const ExecImage image, prepare_exec(spec.argv, spec.env, spec.unset_env));
  const std::vector<char*> argv = exec_array(spec.argv);
  const std::vector<char*> envp = exec_array(image.env);

  SpawnSetup setup;
  if (!setup.ok()) return make_error(ErrorKind::kInternal, "posix_spawn setup failed");
  Spawned child;
  UniqueFd out_w, err_w;
  const auto plumb = [&](Stream mode, int target, UniqueFd& read_end,
                         UniqueFd& write_end) -> core::Status {
    switch (mode) {
      case Stream::kInherit:
        return core::ok_status();
      case Stream::kNull:
        if (posix_spawn_file_actions_addopen(setup.actions(), target, "/dev/null", O_WRONLY, 0) !=
            0) {
          return make_error(ErrorKind::kInternal, "posix_spawn_file_actions_addopen failed");
        }
        return core::ok_status();
      case Stream::kCapture: {
        if (!make_pipe(read_end, write_end, O_CLOEXEC)) {
          return make_error(ErrorKind::kIo, std::string("pipe: ") + std::strerror(errno));
        }
        if (posix_spawn_file_actions_adddup2(setup.actions(), write_end.get(), target) != 0) {
          return make_error(ErrorKind::kInternal, "posix_spawn_file_actions_adddup2 failed");
        }
        return core::ok_status();
      }
    }
    return core::ok_status();
  };
  if (posix_spawn_file_actions_addopen(setup.actions(), 0, "/dev/null", O_RDONLY, 0) != 0) {
    return make_error(ErrorKind::kInternal, "posix_spawn_file_actions_addopen failed");
  }
  GRPO_TRY_STATUS(plumb(spec.out, 1, child.out, out_w));
  GRPO_TRY_STATUS(plumb(spec.err, 2, child.err, err_w));

  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(setup.attr(), &empty);
  posix_spawnattr_setsigdefault(setup.attr(), &all);
  if (spec.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(setup.attr(), 0);
  }
  posix_spawnattr_setflags(setup.attr(), flags);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, image.path.c_str(), setup.actions(), setup.attr(), argv.data(),
                               envp.data());
  if (rc != 0) {
    const ErrorKind kind = rc == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo;
    return make_error(kind, "cannot run " + image.path + ": " + std::strerror(rc));
  }
  child.pid = pid;
  return child;
}

class PosixProcess final : public Process {
 public:
  PosixProcess(pid_t pid, bool own_group) : pid_(pid), own_group_(own_group) {}
  ~PosixProcess() override {
    if (status_) return;
    (void)kill();
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  PosixProcess(const PosixProcess&) = delete;
  PosixProcess& operator=(const PosixProcess&) = delete;

  int pid() const override { return pid_; }

  core::Result<std::optional<ExitStatus>> wait_for(std::optional<milliseconds> timeout) override {
    if (status_) return status_;
    if (!timeout) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, 0);
      if (r == pid_) {
        status_ = from_wait_status(st);
        return status_;
      }
      if (r < 0 && errno == EINTR) return std::optional<ExitStatus>{};  // a handler ran
      return make_error(ErrorKind::kInternal, std::string("waitpid: ") + std::strerror(errno));
    }
    const auto deadline = Clock::now() + *timeout;
    auto nap = milliseconds(1);
    while (true) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        status_ = from_wait_status(st);
        return status_;
      }
      if (r < 0 && errno != EINTR) {
        return make_error(ErrorKind::kInternal, std::string("waitpid: ") + std::strerror(errno));
      }
      const auto now = Clock::now();
      if (now >= deadline) return std::optional<ExitStatus>{};
      std::this_thread::sleep_for(std::min<Clock::duration>(nap, deadline - now));
      nap = std::min(nap * 2, milliseconds(10));
    }
  }

  core::Status signal(int sig) override {
    if (status_) return core::ok_status();
    if (::kill(pid_, sig) != 0 && errno != ESRCH) {
      return make_error(ErrorKind::kInternal, "kill(" + std::to_string(pid_) + ", " +
                                                  signal_name(sig) + "): " + std::strerror(errno));
    }
    return core::ok_status();
  }

  core::Status kill() override {
    if (status_) return core::ok_status();
    if (own_group_ && ::kill(-pid_, SIGKILL) == 0) return core::ok_status();
    if (::kill(pid_, SIGKILL) != 0 && errno != ESRCH) {
      return make_error(ErrorKind::kInternal,
                        "kill(" + std::to_string(pid_) + ", SIGKILL): " + std::strerror(errno));
    }
    return core::ok_status();
  }

 private:
  pid_t pid_;
  bool own_group_;
  std::optional<ExitStatus> status_;
};

}  // namespace

std::string describe(const ExitStatus& status) {
  struct V {
    std::string operator()(const Exited& e) const { return "exit " + std::to_string(e.code); }
    std::string operator()(const Signaled& s) const {
      return "signal " + std::to_string(s.signal) + " (" + signal_name(s.signal) + ")";
    }
  };
  return std::visit(V{}, status);
}

int shell_code(const ExitStatus& status) {
  struct V {
    int operator()(const Exited& e) const { return e.code; }
    int operator()(const Signaled& s) const { return 128 + s.signal; }
  };
  return std::visit(V{}, status);
}

core::Result<ExecImage> prepare_exec(const std::vector<std::string>& argv,
                                     const std::map<std::string, std::string>& set,
                                     const std::vector<std::string>& unset) {
  if (argv.empty() || argv.front().empty()) {
    return make_error(ErrorKind::kInvalidValue, "empty command");
  }
  for (const auto& w : argv) {
    if (w.find('\0') != std::string::npos) {
      return make_error(ErrorKind::kInvalidValue, argv.front() + ": argument contains NUL");
    }
  }
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const auto& name : unset) env.erase(name);
  for (const auto& [k, v] : set) env[k] = v;
  const auto path_it = env.find("PATH");
  auto exe = find_executable(argv.front(), path_it == env.end() ? kDefaultPath : path_it->second);
  if (!exe) {
    return make_error(
        ErrorKind::kNotFound,
        argv.front() + (argv.front().find('/') != std::string::npos ? ": no such executable file"
                                                                    : ": not found on PATH"));
  }
  ExecImage image;
  image.path = std::move(*exe);
  image.env.reserve(env.size());
  for (const auto& [k, v] : env) image.env.push_back(k + "=" + v);
  return image;
}

std::vector<char*> exec_array(const std::vector<std::string>& words) {
  std::vector<char*> out;
  out.reserve(words.size() + 1);
  for (const auto& w : words) out.push_back(const_cast<char*>(w.c_str()));
  out.push_back(nullptr);
  return out;
}

std::optional<std::string> find_executable(const std::string& argv0, const std::string& path) {
  const auto usable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0 &&
           ::access(p.c_str(), X_OK) == 0;
  };
  if (argv0.empty()) return std::nullopt;
  if (argv0.find('/') != std::string::npos) {
    if (usable(argv0)) return argv0;
    return std::nullopt;
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    // POSIX reads an empty or relative entry as the current directory: never here, so that a
    // program planted in the directory a command runs in is never taken for eu-stack or srun.
    if (dir.empty() || dir.front() != '/') {
      start = end + 1;
      continue;
    }
    const std::string candidate = dir + "/" + argv0;
    if (usable(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

core::Result<std::unique_ptr<Process>> PosixProcessRunner::start(const CommandSpec& spec) {
  GRPO_TRY(Spawned child, spawn(spec, false));
  return std::unique_ptr<Process>(new PosixProcess(child.pid, spec.new_process_group));
}

core::Result<Completion> PosixProcessRunner::run(const CommandSpec& spec) {
  const auto t0 = Clock::now();
  GRPO_TRY(Spawned child, spawn(spec, true));
  PosixProcess proc(child.pid, spec.new_process_group);
  Completion done;
  UniqueFd* fds[2] = {&child.out, &child.err};
  std::string* bufs[2] = {&done.out, &done.err};
  std::optional<ExitStatus> status;
  std::optional<Clock::time_point> term_sent;
  std::optional<Clock::time_point> reaped_at;
  const bool limited = spec.timeout.count() > 0;
  const auto deadline = t0 + spec.timeout;
  bool killed = false;

  while (true) {
    const bool any_open = child.out.get() >= 0 || child.err.get() >= 0;
    if (status && (!any_open || Clock::now() - *reaped_at > milliseconds(200))) break;
    if (any_open) {
      pollfd p[2];
      int n = 0;
      int which[2];
      for (int i = 0; i < 2; ++i) {
        if (fds[i]->get() >= 0) {
          p[n] = pollfd{fds[i]->get(), POLLIN, 0};
          which[n++] = i;
        }
      }
      const int r = ::poll(p, static_cast<nfds_t>(n), status ? 20 : 10);
      if (r > 0) {
        for (int k = 0; k < n; ++k) {
          if ((p[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
          char buf[65536];
          const ssize_t got = ::read(p[k].fd, buf, sizeof buf);
          if (got > 0) {
            std::string& b = *bufs[which[k]];
            const std::size_t room = spec.max_capture > b.size() ? spec.max_capture - b.size() : 0;
            b.append(buf, std::min(room, static_cast<std::size_t>(got)));
          } else if (got == 0 || errno != EINTR) {
            fds[which[k]]->reset();
          }
        }
      }
    }
    if (!status) {
      GRPO_TRY(status, proc.wait_for(any_open ? milliseconds(0) : milliseconds(5)));
      if (status) reaped_at = Clock::now();
    }
    if (!status && limited) {
      const auto now = Clock::now();
      if (!term_sent && now >= deadline) {
        done.timed_out = true;
        term_sent = now;
        if (spec.new_process_group) {
          ::kill(-child.pid, SIGTERM);
        } else {
          ::kill(child.pid, SIGTERM);
        }
      } else if (term_sent && !killed && now >= *term_sent + spec.kill_grace) {
        killed = true;
        (void)proc.kill();
      }
    }
  }
  done.status = *status;
  done.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
  return done;
}

}  // namespace grpo::process
