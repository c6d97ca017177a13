// Running one attempt of a run (every rank of the trainer once) behind ONE narrow interface, with
// two implementations in the product and one for tests (docs/supervisor.md, "Runners"):
//   LocalRunner      fork/exec of N ranks on this machine with the torchrun environment
//                    (local_runner.h);
//   SrunRunner       one `srun --mpi=pmix --label` job step inside a Slurm allocation
//                    (srun_runner.h);
//   SimulatedRunner  a failure script played against a fake clock, for unit tests
//                    (tests/support/include/grpo/test_support/simulated_runner.h).
// The supervisor (supervisor.h) only sees what this header declares: it starts an attempt, polls
// what happened (lines of telemetry, ranks ending, the runner's own findings), signals and kills.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/process/process_runner.h"

namespace grpo::supervise {

using process::Exited;
using process::ExitStatus;
using process::Signaled;

// What one attempt runs. The trainer command is the same on every rank; a rank learns its place
// from the environment (torchrun variables locally, PMIx under srun).
struct AttemptSpec {
  int attempt = 1;                         // 1-based, continues across supervisor restarts
  std::vector<std::string> argv;           // the trainer command of every rank, no shell
  std::map<std::string, std::string> env;  // set for every rank on top of the inherited one
  int nodes = 1;                           // nodes of this attempt (Slurm); 1 locally
  int ranks_per_node = 1;                  // world_size = nodes * ranks_per_node
  std::vector<std::string> exclude;        // Slurm: srun --exclude (lost nodes)
  std::filesystem::path log_dir;           // <run_dir>/logs/attempt-<n>: rank-<r>.log, srun.log
  int world_size() const { return nodes * ranks_per_node; }
};

// One line a rank wrote on stdout, without its newline (the trainer's JSONL telemetry; anything
// else an external trainer prints).
struct RankOutput {
  int rank = 0;
  std::string line;
  // The line as a telemetry event when the runner already parsed it (output_parsing.h's
  // parse_event_line), so the supervisor does not parse it twice; nullopt: parse `line`.
  std::optional<nlohmann::json> event;
};

// A rank ended. Locally from waitpid; under srun from srun's "task N: Exited with exit code K" /
// "task N: Killed" lines (srun reports only the ranks that failed).
struct RankExit {
  int rank = 0;
  ExitStatus status;
  std::optional<std::string> node;  // where it ran, when known
  bool oom_killed = false;          // evidence that the kernel's OOM killer sent the SIGKILL
};

// Something the runner itself learned about the attempt (srun's own error lines).
enum class NoteKind {
  kNodeFailure,   // "Node failure on nX", or the step could not be launched on nX
  kOutOfMemory,   // "task N: Out Of Memory" / "oom-kill event(s)" (cgroup OOM killer)
  kLaunchFailed,  // the step (or a rank) could not be started at all
  kInfo,          // anything else worth a log line
};
struct RunnerNote {
  NoteKind kind = NoteKind::kInfo;
  std::string text;                 // the line as the runner saw it
  std::optional<int> rank;          // when the line names a task
  std::optional<std::string> node;  // when the line names a node
};

// Every rank is gone: the last local rank was reaped, or srun exited. Nothing follows it.
struct AttemptExit {
  ExitStatus status;  // locally: the first non-zero rank status, else Exited{0}; srun's own
};

using AttemptEvent = std::variant<RankOutput, RankExit, RunnerNote, AttemptExit>;

class AttemptRunner {
 public:
  virtual ~AttemptRunner() = default;
  virtual std::string_view kind() const = 0;  // "local", "slurm", "simulated"

  // Starts every rank of `spec`. Creates spec.log_dir (0700). Errors: kNotFound (the trainer or
  // srun is not there), kIo (cannot create the logs, fork failed), kInternal (an attempt is
  // still running).
  virtual core::Status start(const AttemptSpec& spec) = 0;

  // Waits at most `timeout_s` for something to happen and returns what did, in order (possibly
  // nothing). After AttemptExit the attempt is over and poll returns nothing more until the next
  // start(). Errors: kInternal.
  virtual core::Result<std::vector<AttemptEvent>> poll(double timeout_s) = 0;

  // Sends `sig` to every rank still running (under srun: to srun, which forwards USR2 to the
  // ranks and turns TERM/INT into the step's termination). A no-op when nothing runs.
  virtual core::Status signal(int sig) = 0;

  // Kills every rank at once (SIGKILL to each rank's process group; under srun: the step is
  // aborted, then srun's group is SIGKILLed). A no-op when nothing runs.
  virtual core::Status kill() = 0;

  // An attempt was started and its AttemptExit has not been returned yet.
  virtual bool active() const = 0;

  // Nodes of the running attempt in node_rank order (Slurm); {"localhost"} locally.
  virtual std::vector<std::string> nodes() const = 0;

  // (rank, pid) of the ranks still running on this machine, for a debugger to read their
  // stacks (hang_report.h); empty where the ranks are not local processes (srun).
  virtual std::vector<std::pair<int, int>> rank_pids() const { return {}; }
};

}  // namespace grpo::supervise
