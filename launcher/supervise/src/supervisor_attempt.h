// One attempt's state in the supervisor's loop (Supervisor::Attempt), shared by supervisor.cpp
// (the run loop) and supervisor_watch.cpp (watching an attempt). Internal to grpo_supervise.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grpo/runlog/step_aggregate.h"
#include "grpo/supervise/supervisor.h"

namespace grpo::supervise {

enum class Supervisor::Ending { kCompleted, kFailed };

struct Supervisor::Attempt {
  int number = 0;
  AttemptSpec spec;
  double start = 0;
  std::int64_t resume_step = -1;
  AttemptMonitor monitor;
  std::vector<Failure> candidates;  // failures seen, in order
  std::set<int> sent;               // signals we sent to the ranks
  bool teardown = false;
  double teardown_at = 0;
  bool killed = false;
  double killed_at = 0;
  bool hang_kill = false;
  std::optional<Hang> hang;            // the hang decided, for its report
  std::optional<StackRequest> stacks;  // hang attribution: the ranks' stacks coming in
  std::optional<double> comm_seen_at;  // the first failure was only a peer's COMM_ERROR
  std::vector<std::string> hosts;      // the step's nodes (Slurm)
  double last_node_check = 0;
  std::optional<double> checkpoint_requested_at;
  std::int64_t checkpoint_at_request = -1;
  bool checkpoint_saved = false;
  std::optional<ExitStatus> exit;
  std::int64_t checkpoint_on_disk = -1;
  double last_disk_check = 0;
  int forwarded = 0;
  std::optional<StepAggregator> step_ranks;  // world > step_event_ranks

  Attempt(int n, AttemptSpec s, double now, std::int64_t resume, const SupervisorConfig& c)
      : number(n),
        spec(std::move(s)),
        start(now),
        resume_step(resume),
        monitor(spec.world_size(), now, c.hang, c.straggler,
                c.contract == TrainerContract::kEmbedded),
        checkpoint_on_disk(resume),
        last_disk_check(now) {
    if (spec.world_size() > c.step_event_ranks) step_ranks.emplace(spec.world_size());
  }
};

}  // namespace grpo::supervise
