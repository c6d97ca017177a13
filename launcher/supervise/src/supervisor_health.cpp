// Node health before every (re)start (docs/supervisor.md, "Node health"): the supervisor's
// side of node_health.h. Part of supervisor.cpp's class, kept apart for size.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "grpo/supervise/supervisor.h"

namespace grpo::supervise {

using nlohmann::json;

namespace {

// Too little space in the run directory: the free-space check, or a write probe that failed with
// ENOSPC / EDQUOT (check_node calls both "disk").
bool storage_finding(const HealthFinding& f) {
  return f.check == "disk";
}

}  // namespace

core::Result<int> Supervisor::give_up_before_attempt(int number, const std::string& reason,
                                                     int code) {
  GRPO_TRY_STATUS(transition(Trigger::kFailure, reason));
  json dj = decision_fields(GiveUp{code, reason});
  dj["attempt"] = number;
  GRPO_TRY_STATUS(record(ev::kDecision, dj));
  GRPO_TRY_STATUS(transition(Trigger::kGiveUp, reason));
  spdlog::error("giving up: {} (exit {})", reason, code);
  return finish_run("failed", code);
}

core::Result<std::variant<int, bool>> Supervisor::check_nodes(
    int number, const std::vector<std::string>& hosts) {
  const bool slurm = d_.job.under_slurm();
  const std::vector<std::string> nodes =
      hosts.empty() ? std::vector<std::string>{"localhost"} : hosts;
  auto found = d_.health(nodes);
  if (!found.ok()) {
    GRPO_TRY_STATUS(warn("health_check", "the node health check could not run (" +
                                             found.error().message + "); starting anyway"));
    return std::variant<int, bool>{false};
  }
  // A step from which no node answered failed itself: that says nothing about the nodes.
  const bool none_answered = !found->empty() && found->size() == nodes.size() &&
                             std::all_of(found->begin(), found->end(), [](const HealthFinding& f) {
                               return f.check == "no_report";
                             });
  if (none_answered && nodes.size() > 1) {
    GRPO_TRY_STATUS(warn("health_check", "no node answered the health check; starting anyway"));
    return std::variant<int, bool>{false};
  }
  // The run directory is shared: when it is full on every node, excluding nodes cannot help.
  const bool storage = std::all_of(nodes.begin(), nodes.end(), [&](const std::string& n) {
    return std::any_of(found->begin(), found->end(),
                       [&](const HealthFinding& f) { return f.node == n && storage_finding(f); });
  });
  std::vector<std::string> bad;
  for (const HealthFinding& f : *found) {
    spdlog::warn("node {} is unhealthy: {}: {}", f.node, f.check, f.detail);
    GRPO_TRY_STATUS(record(ev::kNodeUnhealthy, {{"node", f.node},
                                                {"check", f.check},
                                                {"detail", f.detail},
                                                {"attempt", number},
                                                {"excluded", slurm && !storage}}));
    if (std::find(bad.begin(), bad.end(), f.node) == bad.end()) bad.push_back(f.node);
  }
  if (bad.empty()) return std::variant<int, bool>{false};
  if (storage) {
    const auto f = std::find_if(found->begin(), found->end(), storage_finding);
    GRPO_TRY(const int code,
             give_up_before_attempt(number,
                                    describe(Failure{DiskFull{-1, f->check + ": " + f->detail}}) +
                                        "; free space, then continue the run (the newest good "
                                        "checkpoint is kept)",
                                    kExitDiskFull));
    return std::variant<int, bool>{code};
  }
  const HealthFinding& first = found->front();
  const std::string why =
      "node " + first.node + " is unhealthy (" + first.check + ": " + first.detail + ")";
  if (!slurm) {
    GRPO_TRY(
        const int code,
        give_up_before_attempt(number, why + "; there is no other node to run on", kExitNodesLost));
    return std::variant<int, bool>{code};
  }
  for (const auto& n : bad) {
    exclude(n);
  }
  int available = 0;
  for (const auto& n : d_.job.allocation_nodes()) {
    if (!is_excluded(n)) ++available;
  }
  const int min_nodes = o_.config.min_nodes > 0 ? o_.config.min_nodes : o_.nodes;
  const int usable = usable_nodes(available);
  if (usable < 1 || usable < min_nodes) {
    GRPO_TRY(const int code,
             give_up_before_attempt(number,
                                    why + "; the plan cannot run on the " +
                                        std::to_string(available) + " healthy node(s) left",
                                    kExitNodesLost));
    return std::variant<int, bool>{code};
  }
  return std::variant<int, bool>{true};
}

}  // namespace grpo::supervise
