// What can go wrong with an attempt, as a closed set. The supervisor's monitors produce these;
// the restart policy (restart_policy.h) decides what to do about each. docs/supervisor.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace grpo::supervise {

// A rank exited with a non-zero code or was killed by a signal (and nothing more specific was
// learned from its telemetry).
struct RankCrash {
  int rank = -1;      // -1 when unknown (srun reported the step failed)
  int exit_code = 0;  // 128 + signal when killed
  int signal = 0;     // 0 when it exited normally
  std::string message;
};

// No heartbeat from some rank for longer than the hang timeout of the phase it is in.
struct Hang {
  std::vector<int> ranks;
  double silent_s = 0;
  double timeout_s = 0;
  std::string phase;          // the timeout class (phase_timeouts.h); empty: none (no heartbeats)
  std::string trainer_phase;  // the newest heartbeat's phase of the silent rank ("" if none)
};

// An allocation failed: the trainer's OOM_ERROR, Slurm's OUT_OF_MEMORY, or the kernel OOM killer.
struct OutOfMemory {
  int rank = -1;
  std::string source;  // "trainer", "slurm", "kernel"
  std::string phase;
  std::optional<std::int64_t> requested_bytes;
};

// Gloo / NCCL timeout or a lost peer (the trainer's COMM_ERROR, exit code 4).
struct CommFailure {
  int rank = -1;
  std::string message;
};

// A node of the allocation is gone (srun's "Node failure", the node DOWN in Slurm).
struct NodeLoss {
  std::string node;
};

// The job must yield: USR2 from --signal, SIGTERM, or the Slurm end time is near.
struct Preemption {
  std::string reason;  // "USR2", "SIGTERM", "end time"
};

// A deterministic error: retrying cannot help (configuration error, bad model, ...).
struct FatalError {
  int exit_code = 0;
  std::string message;
};

// No false success: the attempt ended as if training were done (exit 0; grpo-trainer: every rank
// said `done`), but it was not: the steps reached fall short of the run's total, a rank never
// said `done`, or (total unknown) a resumed attempt ended without a new step.
struct Incomplete {
  std::int64_t step = 0;         // the newest step the attempt reached (0: none reported)
  std::int64_t total_steps = 0;  // the run's total (0: unknown)
  std::int64_t resume_step = -1;
  std::string message;  // what fell short
};

// The run directory's file system is full: a checkpoint could not be written for lack of space
// (the trainer's IO_ERROR with `no_space`), or the health step found too little space on every
// node. A restart cannot help until someone frees space.
struct DiskFull {
  int rank = -1;  // the rank that failed to write; -1: the health step
  std::string message;
};

using Failure = std::variant<RankCrash, Hang, OutOfMemory, CommFailure, NodeLoss, Preemption,
                             FatalError, Incomplete, DiskFull>;

// "crash", "hang", "oom", "comm", "node_loss", "preemption", "fatal", "incomplete", "disk_full".
std::string_view failure_class(const Failure& f);
// One line for people.
std::string describe(const Failure& f);

}  // namespace grpo::supervise
