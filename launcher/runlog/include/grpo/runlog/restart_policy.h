// The restart policy: a pure function of (failure, history, budget, context) -> decision,
// unit-tested over every failure class (tests/unit/supervisor_core_test.cpp). docs/supervisor.md.
// `history` holds the attempts BEFORE the failed one; `context` describes the failed attempt.
//
// Failures spend the restart budget; preemption and membership changes (a lost node that is
// excluded) do not. A run that restarts K times without a new checkpoint stops with
// kExitNoProgress ("do not requeue"). OOM is remediated before restarting: a smaller micro
// batch, then offload; with nothing left to change it gives up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "grpo/runlog/failure.h"

namespace grpo::supervise {

// Exit codes of a supervised run (also docs/exit-codes.md).
enum SupervisorExit : int {
  kExitSucceeded = 0,
  kExitRequeue = 75,          // EX_TEMPFAIL: the job was (or should be) requeued; it will resume
  kExitRestartBudget = 80,    // failures used up the restart budget
  kExitNoProgress = 81,       // restarts made no new checkpoint: do not requeue
  kExitFatal = 82,            // a deterministic error (configuration); retrying cannot help
  kExitOomUnremediable = 83,  // out of memory with nothing left to shrink
  kExitNodesLost = 84,        // a node was lost, too few are left and no requeue (outside Slurm)
  kExitDiskFull = 85,         // the run directory's file system is full: no checkpoint fits
  kExitExportFailed = 86,     // training succeeded but the --export-hf export could not be written
  kExitInterrupted = 130,     // stopped by the user (SIGINT / SIGTERM outside Slurm)
};

struct Budget {
  int max_restarts = 5;          // restarts that failures may spend
  double backoff_base_s = 1.0;   // delay before the first restart
  double backoff_max_s = 60.0;   // cap of the exponential backoff
  int no_progress_restarts = 3;  // K: restarts in a row without a new checkpoint
};

// What the supervisor knows about earlier attempts of this run (rebuilt from the event log).
struct AttemptRecord {
  int attempt = 0;
  std::optional<std::string> failure_class;  // nullopt: the attempt did not fail
  bool spent_budget = false;
  std::int64_t checkpoint_step_at_start = -1;  // newest valid checkpoint when it started (-1: none)
  std::int64_t checkpoint_step_at_end = -1;    // ... and when it ended
};

struct History {
  std::vector<AttemptRecord> attempts;
  int restarts_spent() const;
  // Failed attempts in a row (newest last) that ended without a checkpoint newer than the one
  // they started from.
  int restarts_without_progress() const;
  // Failed attempts in a row, for the backoff.
  int consecutive_failures() const;
};

// The knobs the policy may turn, and what the environment allows.
struct Context {
  bool under_slurm = false;           // requeue is possible
  int nodes = 1;                      // nodes in the current attempt
  int min_nodes = 1;                  // fewest nodes the plan still runs on (DP shrinks)
  int spares = 0;                     // hot spares: allocated nodes outside this attempt
  std::vector<std::string> excluded;  // nodes already excluded
  int micro_batch = 1;                // current micro batch per rank
  bool offload = false;               // offload already on
  bool offload_supported = false;     // the trainer can offload
  bool made_progress = false;         // the failed attempt wrote a newer checkpoint than it
                                      // started from (ends a run of restarts without progress)
};

struct Remediation {
  std::optional<int> micro_batch;  // new micro batch
  std::optional<bool> offload;     // turn offload on
  std::string what;                // "micro batch 8 -> 4"
};

struct Restart {
  double delay_s = 0;
  bool spends_budget = true;
  std::vector<std::string> exclude;  // nodes to add to srun --exclude
  std::optional<Remediation> remediation;
  std::string reason;
};

struct Requeue {
  std::string reason;
};

struct GiveUp {
  int exit_code = kExitRestartBudget;
  std::string reason;
};

using Decision = std::variant<Restart, Requeue, GiveUp>;

Decision decide(const Failure& failure, const History& history, const Budget& budget,
                const Context& context);

std::string_view decision_kind(const Decision& d);  // "restart", "requeue", "give_up"

}  // namespace grpo::supervise
