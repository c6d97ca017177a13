// Running other programs (sbatch, scontrol, srun, later the local ranks) behind one narrow
// interface: a real implementation (posix_spawn, no shell) here and a scripted fake for unit
// tests (tests/support/include/grpo/test_support/fake_process_runner.h). Two ways to run something:
//   run():   to completion, stdout/stderr captured, killed after a timeout (sbatch, scontrol);
//   start(): a handle to a running child that the caller waits for, signals and kills (the
//            srun job step and the local ranks the supervisor starts).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::process {

// How a child ended (closed: visit without a default branch).
struct Exited {
  int code = 0;
  friend bool operator==(const Exited&, const Exited&) = default;
};
struct Signaled {
  int signal = 0;
  friend bool operator==(const Signaled&, const Signaled&) = default;
};
using ExitStatus = std::variant<Exited, Signaled>;

// "exit 3", "signal 9 (SIGKILL)".
std::string describe(const ExitStatus& status);
// The shell's convention: the exit code, or 128 + signal.
int shell_code(const ExitStatus& status);

enum class Stream {
  kInherit,  // the child writes to our stdout / stderr
  kCapture,  // collected into Completion::out / err (run() only)
  kNull,     // /dev/null
};

struct CommandSpec {
  // argv[0] is a path, or a name looked up in PATH (the child's PATH when `env` sets one).
  std::vector<std::string> argv;
  // Variables set (or replaced) in the child's environment on top of this process's one.
  std::map<std::string, std::string> env;
  // Variables removed from the child's environment.
  std::vector<std::string> unset_env;
  Stream out = Stream::kCapture;
  Stream err = Stream::kCapture;
  // run(): SIGTERM after this long, SIGKILL `kill_grace` later. Zero: no limit.
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds kill_grace{2000};
  // Bytes kept per captured stream (the rest is read and dropped).
  std::size_t max_capture = 1u << 20;
  // The child leads its own process group: a terminal's Ctrl-C or a signal to our group does
  // not reach it except through us, and kill() reaches its whole group.
  bool new_process_group = true;
};

struct Completion {
  ExitStatus status;
  bool timed_out = false;  // killed by run() because `timeout` passed
  std::string out;         // captured stdout (empty unless Stream::kCapture)
  std::string err;         // captured stderr
  std::chrono::milliseconds elapsed{0};
};

// A started child. Destroying a handle whose child still runs SIGKILLs its group and reaps it.
class Process {
 public:
  virtual ~Process() = default;
  virtual int pid() const = 0;
  // Waits at most `timeout` (nullopt: until it ends). Returns nullopt while it still runs.
  // Errors: kInternal (waitpid failed).
  virtual core::Result<std::optional<ExitStatus>> wait_for(
      std::optional<std::chrono::milliseconds> timeout) = 0;
  // Sends `sig` to the child itself (not its group). A no-op once it has been reaped.
  virtual core::Status signal(int sig) = 0;
  // SIGKILL to the child's process group (or the child, without its own group).
  virtual core::Status kill() = 0;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Starts argv. `out`/`err` must be kInherit or kNull (kCapture is run()'s). Errors:
  // kNotFound (argv[0] not found on PATH / no such file: "sbatch: not found on PATH"),
  // kIo (exists but cannot be executed), kInvalidValue (empty argv, NUL in a word).
  virtual core::Result<std::unique_ptr<Process>> start(const CommandSpec& spec) = 0;
  // Runs argv to completion, capturing what was asked. Same errors as start().
  virtual core::Result<Completion> run(const CommandSpec& spec) = 0;
};

// The real runner: posix_spawn (no shell), stdin from /dev/null, signal mask and dispositions
// reset in the child, pipes for captured streams.
class PosixProcessRunner final : public ProcessRunner {
 public:
  core::Result<std::unique_ptr<Process>> start(const CommandSpec& spec) override;
  core::Result<Completion> run(const CommandSpec& spec) override;
};

// The search path when PATH is unset (glibc's execvp would search the current directory first).
inline constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
// The executable argv0 names: argv0 itself when it contains '/', else the first regular,
// executable file in an absolute `path` entry (empty and relative entries, which POSIX reads as
// the current directory, are skipped). nullopt when there is none.
std::optional<std::string> find_executable(const std::string& argv0, const std::string& path);

// What posix_spawn / execve need to start a command: the executable found on the PATH of the
// child's environment, and that environment (ours, minus `unset`, plus `set`) as "K=V" strings.
struct ExecImage {
  std::string path;
  std::vector<std::string> env;
};
// Errors: kInvalidValue (empty command, an argument with NUL), kNotFound (no such executable).
// The one home of these checks for every way the project starts a program.
core::Result<ExecImage> prepare_exec(const std::vector<std::string>& argv,
                                     const std::map<std::string, std::string>& set,
                                     const std::vector<std::string>& unset);
// A null-terminated array of pointers into `words`, as execve wants (valid while `words` is).
std::vector<char*> exec_array(const std::vector<std::string>& words);

}  // namespace grpo::process
