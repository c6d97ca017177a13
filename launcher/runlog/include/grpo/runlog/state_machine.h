// The run's state machine: one table of (trigger, from, to), in state_machine.cpp, nothing else
// changes a run's state. docs/supervisor.md draws it.
//
//   launching --progress--> healthy --stall--> unhealthy --progress--> healthy
//   launching|healthy|unhealthy --failure|preemption--> stopping
//   launching|healthy|unhealthy --completed--> succeeded
//   stopping --restart--> restarting --launch--> launching
//   stopping --give_up--> failed          stopping --requeue--> requeued
#pragma once

#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::supervise {

enum class RunState {
  kLaunching,
  kHealthy,
  kUnhealthy,
  kStopping,
  kRestarting,
  kSucceeded,
  kFailed,
  kRequeued
};

enum class Trigger {
  kLaunch,      // the attempt's ranks were started
  kProgress,    // every rank reported a heartbeat or a step
  kStall,       // heartbeats are late (not yet a hang)
  kFailure,     // a failure was detected
  kPreemption,  // the job must yield (USR2, SIGTERM, end time)
  kCompleted,   // every rank finished training
  kRestart,     // the policy decided to restart
  kGiveUp,      // the policy decided to stop for good
  kRequeue,     // the policy decided to hand the job back to Slurm
};

struct Transition {
  Trigger trigger;
  RunState from;
  RunState to;
};

const std::vector<Transition>& transition_table();

// The state `trigger` leads to from `from`; kInternal when the table has no such transition.
core::Result<RunState> next_state(RunState from, Trigger trigger);

bool is_terminal(RunState s);
std::string_view to_string(RunState s);
std::string_view to_string(Trigger t);
// Parses to_string's output (event-log replay). kInvalidValue when unknown.
core::Result<RunState> parse_run_state(std::string_view s);
core::Result<Trigger> parse_trigger(std::string_view s);

}  // namespace grpo::supervise
