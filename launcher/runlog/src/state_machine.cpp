#include "grpo/runlog/state_machine.h"

#include <string>

namespace grpo::supervise {

using S = RunState;
using T = Trigger;

const std::vector<Transition>& transition_table() {
  static const std::vector<Transition> table = {
      {T::kProgress, S::kLaunching, S::kHealthy},    {T::kProgress, S::kHealthy, S::kHealthy},
      {T::kProgress, S::kUnhealthy, S::kHealthy},    {T::kStall, S::kLaunching, S::kUnhealthy},
      {T::kStall, S::kHealthy, S::kUnhealthy},       {T::kStall, S::kUnhealthy, S::kUnhealthy},
      {T::kFailure, S::kLaunching, S::kStopping},    {T::kFailure, S::kHealthy, S::kStopping},
      {T::kFailure, S::kUnhealthy, S::kStopping},    {T::kPreemption, S::kLaunching, S::kStopping},
      {T::kPreemption, S::kHealthy, S::kStopping},   {T::kPreemption, S::kUnhealthy, S::kStopping},
      {T::kCompleted, S::kLaunching, S::kSucceeded}, {T::kCompleted, S::kHealthy, S::kSucceeded},
      {T::kCompleted, S::kUnhealthy, S::kSucceeded}, {T::kRestart, S::kStopping, S::kRestarting},
      {T::kGiveUp, S::kStopping, S::kFailed},        {T::kRequeue, S::kStopping, S::kRequeued},
      {T::kLaunch, S::kRestarting, S::kLaunching},
  };
  return table;
}

core::Result<RunState> next_state(RunState from, Trigger trigger) {
  for (const auto& t : transition_table()) {
    if (t.trigger == trigger && t.from == from) return t.to;
  }
  return core::make_error(core::ErrorKind::kInternal,
                          "no transition for '" + std::string(to_string(trigger)) +
                              "' from state '" + std::string(to_string(from)) + "'");
}

bool is_terminal(RunState s) {
  return s == S::kSucceeded || s == S::kFailed || s == S::kRequeued;
}

std::string_view to_string(RunState s) {
  switch (s) {
    case S::kLaunching:
      return "launching";
    case S::kHealthy:
      return "healthy";
    case S::kUnhealthy:
      return "unhealthy";
    case S::kStopping:
      return "stopping";
    case S::kRestarting:
      return "restarting";
    case S::kSucceeded:
      return "succeeded";
    case S::kFailed:
      return "failed";
    case S::kRequeued:
      return "requeued";
  }
  return "failed";
}

std::string_view to_string(Trigger t) {
  switch (t) {
    case T::kLaunch:
      return "launch";
    case T::kProgress:
      return "progress";
    case T::kStall:
      return "stall";
    case T::kFailure:
      return "failure";
    case T::kPreemption:
      return "preemption";
    case T::kCompleted:
      return "completed";
    case T::kRestart:
      return "restart";
    case T::kGiveUp:
      return "give_up";
    case T::kRequeue:
      return "requeue";
  }
  return "failure";
}

core::Result<RunState> parse_run_state(std::string_view s) {
  for (auto v : {S::kLaunching, S::kHealthy, S::kUnhealthy, S::kStopping, S::kRestarting,
                 S::kSucceeded, S::kFailed, S::kRequeued}) {
    if (to_string(v) == s) return v;
  }
  return core::make_error(core::ErrorKind::kInvalidValue,
                          "unknown run state '" + std::string(s) + "'");
}

core::Result<Trigger> parse_trigger(std::string_view s) {
  for (auto v : {T::kLaunch, T::kProgress, T::kStall, T::kFailure, T::kPreemption, T::kCompleted,
                 T::kRestart, T::kGiveUp, T::kRequeue}) {
    if (to_string(v) == s) return v;
  }
  return core::make_error(core::ErrorKind::kInvalidValue,
                          "unknown trigger '" + std::string(s) + "'");
}

}  // namespace grpo::supervise
