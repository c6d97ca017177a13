#include "grpo/supervise/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "grpo/process/unique_fd.h"

namespace grpo::supervise {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

constexpr std::size_t kMaxLine = 1u << 20;

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

bool LineBuffer::read_from(int fd, std::vector<std::string>& out) {
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      std::size_t start = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        if (buf[i] != '\n') continue;
        partial_.append(buf + start, i - start);
        out.push_back(std::move(partial_));
        partial_.clear();
        start = i + 1;
      }
      partial_.append(buf + start, static_cast<std::size_t>(n) - start);
      if (partial_.size() > kMaxLine) {
        out.push_back(std::move(partial_));
        partial_.clear();
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    // EOF or a real error
    if (!partial_.empty()) {
      out.push_back(std::move(partial_));
      partial_.clear();
    }
    return false;
  }
}

core::Result<std::unique_ptr<Child>> Child::spawn(const ChildSpec& spec) {
  GRPO_TRY(const process::ExecImage image,
           process::prepare_exec(spec.argv, spec.env, spec.unset_env));
  const std::vector<char*> argv = process::exec_array(spec.argv);
  const std::vector<char*> envp = process::exec_array(image.env);

  // Every descriptor is owned: each error path below closes all of them.
  using process::UniqueFd;
  UniqueFd out_r, out_w, err_r, err_w, in_r, in_w, status_r, status_w, err_file;
  if (!process::make_pipe(out_r, out_w, O_CLOEXEC) ||
      !process::make_pipe(status_r, status_w, O_CLOEXEC) ||
      (spec.stdin_pipe && !process::make_pipe(in_r, in_w, O_CLOEXEC))) {
    return make_error(ErrorKind::kIo, errno_text("pipe"));
  }
  if (spec.stderr_file) {
    err_file = UniqueFd(
        ::open(spec.stderr_file->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (err_file.get() < 0) {
      return make_error(ErrorKind::kIo,
                        errno_text(("cannot open " + spec.stderr_file->string()).c_str()));
    }
  } else if (!process::make_pipe(err_r, err_w, O_CLOEXEC)) {
    return make_error(ErrorKind::kIo, errno_text("pipe"));
  }
  const int child_in = in_r.get(), child_out = out_w.get(), status_fd = status_w.get();
  const int child_err = spec.stderr_file ? err_file.get() : err_w.get();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return make_error(ErrorKind::kIo, errno_text("fork"));
  if (pid == 0) {
    // The child: only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the supervisor is already gone
    if (spec.stdin_pipe) {
      ::dup2(child_in, 0);
    } else {
      const int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
    }
    ::dup2(child_out, 1);
    ::dup2(child_err, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s = 1; s < NSIG; ++s) {
      if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
    }
    ::execve(image.path.c_str(), argv.data(), envp.data());
    const int e = errno;
    (void)!::write(status_fd, &e, sizeof e);
    ::_exit(127);
  }
  // The parent: the child's ends are the child's now.
  ::setpgid(pid, pid);  // also here: no race with signal_group() right after spawn
  out_w.reset();
  err_w.reset();
  in_r.reset();
  err_file.reset();
  status_w.reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(status_r.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  status_r.reset();
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return make_error(child_errno == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                      "cannot run " + image.path + ": " + std::strerror(child_errno));
  }
  auto child = std::unique_ptr<Child>(new Child());
  child->pid_ = pid;
  child->out_ = out_r.release();
  child->err_ = err_r.release();
  child->in_ = in_w.release();
  ::fcntl(child->out_, F_SETFL, ::fcntl(child->out_, F_GETFL) | O_NONBLOCK);
  if (child->err_ >= 0) ::fcntl(child->err_, F_SETFL, ::fcntl(child->err_, F_GETFL) | O_NONBLOCK);
  return child;
}

Child::~Child() {
  if (!status_ && pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  close_fd(out_);
  close_fd(err_);
  close_fd(in_);
}

void Child::close_in() {
  close_fd(in_);
}
void Child::close_out() {
  close_fd(out_);
}
void Child::close_err() {
  close_fd(err_);
}

std::optional<process::ExitStatus> Child::try_reap() {
  if (status_) return status_;
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    if (WIFSIGNALED(st)) {
      status_ = process::Signaled{WTERMSIG(st)};
    } else {
      status_ = process::Exited{WEXITSTATUS(st)};
    }
  }
  return status_;
}

void Child::signal_group(int sig) {
  // Once the leader is reaped its pid, and with it the group id, may belong to an unrelated
  // process (group) at any time: never signal -pid_ then. Until then the unreaped leader (at
  // worst a zombie) keeps both ids ours.
  if (status_) return;
  if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);
}

void Child::signal_self(int sig) {
  if (!status_) ::kill(pid_, sig);
}

void wait_readable(const std::vector<int>& fds, double left_s) {
  std::vector<pollfd> polled;
  for (int fd : fds) {
    if (fd >= 0) polled.push_back(pollfd{fd, POLLIN, 0});
  }
  const int ms = static_cast<int>(std::min(left_s, 0.01) * 1000) + 1;
  if (polled.empty()) {
    ::usleep(static_cast<useconds_t>(ms) * 1000);
  } else {
    (void)::poll(polled.data(), polled.size(), ms);
  }
}

int open_log(const fs::path& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

void write_line(int fd, std::string_view line) {
  if (fd < 0) return;
  std::string l(line);
  l += '\n';
  (void)!::write(fd, l.data(), l.size());
}

core::Status make_log_dir(const fs::path& dir) {
  // The missing directories, outermost first; only those are created, and made 0700 (whatever
  // the umask): a directory that already exists keeps its mode.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0) {
      if (errno == EEXIST && fs::is_directory(*it, ec)) continue;  // made by someone else
      return make_error(ErrorKind::kIo, errno_text(("cannot create " + it->string()).c_str()));
    }
    ::chmod(it->c_str(), 0700);
  }
  if (!fs::is_directory(dir, ec)) {
    return make_error(ErrorKind::kIo, "cannot create " + dir.string() + ": not a directory");
  }
  return core::ok_status();
}

core::Result<int> free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(ErrorKind::kIo, errno_text("socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string msg = errno_text("bind 127.0.0.1:0");
    ::close(fd);
    return make_error(ErrorKind::kIo, msg);
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

bool process_stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  // "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  const char state = stat[close + 2];
  return state == 'T' || state == 't';
}

namespace {

std::optional<fs::path> memory_counter_file(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  std::optional<fs::path> v1, v2;
  while (std::getline(in, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1)
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty()) {
      v2 = fs::path("/sys/fs/cgroup" + path) / "memory.events";
    } else if (controllers.find("memory") != std::string::npos) {
      v1 = fs::path("/sys/fs/cgroup/memory" + path) / "memory.oom_control";
    }
  }
  std::error_code ec;
  if (v2 && fs::exists(*v2, ec)) return v2;
  if (v1 && fs::exists(*v1, ec)) return v1;
  return std::nullopt;
}

long long read_oom_kills(const fs::path& file) {
  std::ifstream in(file);
  std::string key;
  long long value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return 0;
}

}  // namespace

const std::vector<std::string>& rank_identity_variables() {
  static const std::vector<std::string> v = {
      // torchrun (torch/distributed/run.py and elastic's agent)
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
      "NODE_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT",
      "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
      // PMIx (a step's identity; srun --mpi=pmix sets its own)
      "PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI2", "PMIX_SERVER_URI3", "PMIX_SERVER_URI4",
      "PMIX_SERVER_URI41", "PMIX_SERVER_URI21"};
  return v;
}

OomSnapshot oom_snapshot(pid_t pid, const std::string& program, const fs::path& kmsg) {
  OomSnapshot s;
  s.counter_file = memory_counter_file(pid);
  if (s.counter_file) s.oom_kills = read_oom_kills(*s.counter_file);
  // The kernel's comm: the executed file's base name, cut to TASK_COMM_LEN - 1 = 15 bytes.
  s.comm = fs::path(program).filename().string().substr(0, 15);
  s.kmsg = process::UniqueFd(::open(kmsg.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (s.kmsg.get() >= 0) ::lseek(s.kmsg.get(), 0, SEEK_END);  // /dev/kmsg: after the newest
  return s;
}

bool kmsg_names_oom_victim(std::string_view record, pid_t pid, std::string_view comm) {
  const std::string p = std::to_string(pid);
  const std::string c(comm);
  return record.find("Killed process " + p + " (" + c + ")") != std::string_view::npos ||
         (record.find("oom-kill:") != std::string_view::npos &&
          record.find(",task=" + c + ",pid=" + p + ",") != std::string_view::npos);
}

bool oom_killed(pid_t pid, const OomSnapshot& snapshot) {
  if (snapshot.kmsg.get() >= 0) {
    // /dev/kmsg gives one record per read; a file (tests) gives lines in chunks.
    std::string pending;
    char buf[8192];
    for (int i = 0; i < 100000; ++i) {
      const ssize_t n = ::read(snapshot.kmsg.get(), buf, sizeof buf);
      if (n < 0 && errno == EPIPE) continue;  // records overwritten while reading
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        if (kmsg_names_oom_victim(std::string_view(pending).substr(0, nl), pid, snapshot.comm)) {
          return true;
        }
        pending.erase(0, nl + 1);
      }
    }
    if (kmsg_names_oom_victim(pending, pid, snapshot.comm)) return true;
  }
  if (snapshot.counter_file) return read_oom_kills(*snapshot.counter_file) > snapshot.oom_kills;
  return false;
}

}  // namespace grpo::supervise
