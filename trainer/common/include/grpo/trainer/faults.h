// Fault injection for the supervisor's tests (off unless asked): `--fault SPEC` (repeatable),
// which grpo-launch passes on the trainer's command line (`grpo-launch run --fault`). Nothing
// else turns it on: a GRPO_FAULT variable left in the environment is ignored with a warning.
// Grammar and effects: docs/trainer.md#fault-injection.
//
//   SPEC  := FAULT (';' FAULT)*
//   FAULT := KIND ['@' KEY '=' VALUE (',' KEY '=' VALUE)*]
//   KIND  := crash | sigkill | abort | hang | oom | bad_alloc | slow | corrupt_ckpt | torn_ckpt
//            | imbalance | exit
//   KEY   := step | rank | phase | ms | s | code | repeat
//
// A fault fires at most once per run directory (a marker file under <run_dir>/faults/ records
// that it fired, so a resumed attempt passes the same step), unless repeat=1. LibTorch-free.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::trainer {

enum class FaultKind {
  kCrash,        // _exit(kExitInjectedCrash) at once: no cleanup, no checkpoint
  kSigkill,      // raise(SIGKILL): what kill -9 does, at a precise step
  kSigstop,      // raise(SIGSTOP): what kill -STOP does (a frozen rank), at a precise step
  kAbort,        // abort(): SIGABRT, as a failed assertion
  kHang,         // stop heartbeats and sleep (s= seconds, default forever)
  kOom,          // ask LibTorch for an impossible tensor: the real allocation-failure path
  kBadAlloc,     // throw std::bad_alloc from an oversized std::vector
  kSlow,         // sleep ms= milliseconds per step (from step=, default every step)
  kCorruptCkpt,  // flip bytes of model.safetensors after the checkpoint committed
  kTornCkpt,     // write half of model.safetensors and die: a torn temporary directory
  kImbalance,    // bias every router towards expert 0 for that step (EXPERT_IMBALANCE)
  kExit,         // exit(code=) cleanly at the step
  kHold,         // wait, heartbeats going on, until <run_dir>/faults/release exists (s=, 120 s)
};

std::string_view to_string(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::kCrash;
  std::int64_t step = -1;       // -1: any step (slow: every step from `step`)
  std::optional<int> rank;      // nullopt: every rank
  std::string phase = "start";  // start | rollout | update | checkpoint | sft
  std::int64_t ms = 0;          // slow: sleep per step
  double seconds = 0;           // hang: 0 = forever
  int code = 1;                 // exit: the exit code
  bool repeat = false;          // fire on every attempt, not only once per run directory
  std::string text;             // the fault as written
};

// Errors: kInvalidValue with the offending fault in the message.
core::Result<std::vector<Fault>> parse_faults(std::string_view spec);
// The faults of a run: every --fault spec, in order, and nothing from the environment.
// Errors: those of parse_faults.
core::Result<std::vector<Fault>> parse_fault_specs(const std::vector<std::string>& specs);
// One line to warn with when the GRPO_FAULT environment variable is set (it has no effect: a
// variable left in a user's shell must never inject faults into production ranks); nullopt
// when it is not set.
std::optional<std::string> ignored_fault_environment();

class FaultInjector {
 public:
  FaultInjector() = default;
  FaultInjector(std::vector<Fault> faults, int rank, std::filesystem::path marker_dir);

  bool empty() const { return faults_.empty(); }
  // The fault of `kind` due at (step, phase) on this rank, if any; marks it fired first.
  std::optional<Fault> take(FaultKind kind, std::int64_t step, std::string_view phase);
  // Whether a fault that ends or freezes this process (crash, sigkill, sigstop, abort, exit,
  // oom, bad_alloc) is due at (step, phase) on this rank and has not fired. Marks nothing.
  bool ends_process_at(std::int64_t step, std::string_view phase) const;
  // Milliseconds to sleep in this step (slow faults), 0 if none.
  std::int64_t slow_ms(std::int64_t step) const;
  // Whether <marker dir>/release exists (ends a `hold`).
  bool released() const;
  const std::vector<Fault>& faults() const { return faults_; }

 private:
  bool fired(const Fault& f) const;
  void mark(const Fault& f) const;
  std::vector<Fault> faults_;
  int rank_ = 0;
  std::filesystem::path marker_dir_;
};

}  // namespace grpo::trainer
