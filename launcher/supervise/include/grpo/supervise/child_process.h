// A child process whose output the supervisor reads line by line: fork/exec (no shell), its own
// process group, SIGKILL when the supervisor dies (PR_SET_PDEATHSIG), stdin /dev/null, stdout
// (and optionally stderr) to non-blocking pipes or stderr appended to a file. Used by the local
// and srun runners; nothing here knows about ranks.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/process/process_runner.h"
#include "grpo/process/unique_fd.h"

namespace grpo::supervise {

struct ChildSpec {
  std::vector<std::string> argv;           // argv[0]: a path or a name looked up in PATH
  std::map<std::string, std::string> env;  // set on top of this process's environment
  std::vector<std::string> unset_env;      // removed from it
  // stderr: appended to this file (created 0600), or a pipe when nullopt.
  std::optional<std::filesystem::path> stderr_file;
  // stdin: a pipe we write to (in_fd()) instead of /dev/null.
  bool stdin_pipe = false;
};

// Splits what a pipe delivers into lines. Lines longer than 1 MiB are cut.
class LineBuffer {
 public:
  // Reads what is available from `fd` (non-blocking) and appends complete lines to `out`.
  // Returns false at end of file (or on an error other than EAGAIN/EINTR); a last line without
  // a newline is then delivered too.
  bool read_from(int fd, std::vector<std::string>& out);

 private:
  std::string partial_;
};

class Child {
 public:
  // Starts it. Errors: kNotFound (no such program), kIo (pipes, fork, the stderr file, exec
  // failure other than ENOENT), kInvalidValue (empty argv, NUL).
  static core::Result<std::unique_ptr<Child>> spawn(const ChildSpec& spec);
  ~Child();  // SIGKILLs the group of a child still running and reaps it
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  int out_fd() const { return out_; }  // -1 once closed
  int err_fd() const { return err_; }  // -1 when not piped or closed
  int in_fd() const { return in_; }    // -1 when not piped or closed
  void close_out();
  void close_err();
  void close_in();
  // Reaps it without waiting; the status once it has ended (then always the same).
  std::optional<process::ExitStatus> try_reap();
  bool reaped() const { return status_.has_value(); }
  // To its whole process group (the child leads it). A no-op once reaped: the pid, and the
  // group id with it, may then belong to another process.
  void signal_group(int sig);
  void signal_self(int sig);

 private:
  Child() = default;
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  int in_ = -1;
  std::optional<process::ExitStatus> status_;
};

// Whether process `pid` is stopped (state T in /proc/<pid>/stat: SIGSTOP, SIGTSTP; also a
// ptrace stop, t): it cannot answer a signal until continued. False when it is gone.
bool process_stopped(pid_t pid);

// Creates an attempt's log directory and any missing parent (<run_dir>/logs), each 0700. Only
// what it creates: an existing directory's mode is left alone. Errors: kIo.
core::Status make_log_dir(const std::filesystem::path& dir);

// Waits until one of `fds` (those >= 0) is readable or a short slice passes: at most 10 ms and
// at most `left_s`. The runners poll in such slices because a child's end shows in waitpid, not
// on a descriptor.
void wait_readable(const std::vector<int>& fds, double left_s);

// A log file of an attempt opened for appending (0600, close-on-exec); -1 when it cannot be.
int open_log(const std::filesystem::path& path);
// Appends `line` and a newline to `fd` (nothing when fd < 0; a failed write is ignored: a log
// must never stop the supervisor).
void write_line(int fd, std::string_view line);

// The variables that tell a process which rank of which job it is: torchrun's (RANK, WORLD_SIZE,
// MASTER_ADDR, ...) and PMIx's. A rank inherits none of them from the supervisor's environment:
// the local runner sets its own, srun's PMIx plugin sets PMIx's (a stray RANK or WORLD_SIZE in
// the shell that submitted the job would otherwise reach grpo-trainer's torchrun fallback).
const std::vector<std::string>& rank_identity_variables();

// A free TCP port on 127.0.0.1 (bound to port 0, read back, released): the rendezvous port of a
// local attempt. Errors: kIo.
core::Result<int> free_local_port();

// Evidence that the kernel's OOM killer killed `pid`: its memory cgroup's oom_kill counter grew
// since `snapshot` (cgroup v2 memory.events, v1 memory.oom_control), or a kernel log record
// (/dev/kmsg) written since the snapshot names both its PID and its name. Records from before
// the snapshot are never read: a PID in them belonged to an earlier process (PID reuse), and
// one from another PID namespace names a different process whose name rarely matches too.
// Without cgroups and without a readable kernel log (containers, gVisor) there is no evidence
// and a kernel OOM kill looks like any SIGKILL.
struct OomSnapshot {
  std::optional<std::filesystem::path> counter_file;
  long long oom_kills = 0;
  process::UniqueFd kmsg;  // the kernel log, opened at the snapshot and positioned at its end
  std::string comm;        // the name the kernel logs for the process (its program, <= 15 bytes)
};
// Takes the snapshot of a process just started from `program` (argv[0]). `kmsg`: the kernel
// log (a regular file in tests).
OomSnapshot oom_snapshot(pid_t pid, const std::string& program,
                         const std::filesystem::path& kmsg = "/dev/kmsg");
bool oom_killed(pid_t pid, const OomSnapshot& snapshot);
// Whether one kernel log record says the OOM killer killed the process `pid` named `comm`:
// "Out of memory: Killed process PID (COMM) ..." or "oom-kill:...,task=COMM,pid=PID,...".
bool kmsg_names_oom_victim(std::string_view record, pid_t pid, std::string_view comm);

}  // namespace grpo::supervise
