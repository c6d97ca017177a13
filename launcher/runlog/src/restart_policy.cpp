#include "grpo/runlog/restart_policy.h"

#include <algorithm>
#include <cmath>

#include "grpo/core/overloaded.h"

namespace grpo::supervise {
namespace {

using core::Overloaded;

double backoff(const History& h, const Budget& b) {
  const int n = h.consecutive_failures();  // failures before this one
  return std::min(b.backoff_max_s, b.backoff_base_s * std::pow(2.0, std::max(0, n)));
}

// The checks every budget-spending failure goes through before restarting.
Decision spend(const History& h, const Budget& b, const Context& ctx, std::string reason) {
  if (h.restarts_spent() >= b.max_restarts) {
    return GiveUp{kExitRestartBudget, "restart budget of " + std::to_string(b.max_restarts) +
                                          " used up; last failure: " + reason};
  }
  if (!ctx.made_progress && h.restarts_without_progress() >= b.no_progress_restarts) {
    return GiveUp{kExitNoProgress,
                  std::to_string(h.restarts_without_progress()) +
                      " restarts in a row without a new checkpoint; last failure: " + reason};
  }
  Restart r;
  // A failure after progress (a new checkpoint) starts a new series: the base delay again.
  r.delay_s = ctx.made_progress ? b.backoff_base_s : backoff(h, b);
  r.reason = std::move(reason);
  return r;
}

}  // namespace

int History::restarts_spent() const {
  return static_cast<int>(std::count_if(attempts.begin(), attempts.end(),
                                        [](const AttemptRecord& a) { return a.spent_budget; }));
}

int History::restarts_without_progress() const {
  int n = 0;
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
    if (!it->failure_class) break;
    if (it->checkpoint_step_at_end > it->checkpoint_step_at_start) break;
    ++n;
  }
  return n;
}

int History::consecutive_failures() const {
  int n = 0;
  for (auto it = attempts.rbegin(); it != attempts.rend() && it->failure_class && it->spent_budget;
       ++it)
    ++n;
  return n;
}

Decision decide(const Failure& failure, const History& history, const Budget& budget,
                const Context& ctx) {
  return std::visit(
      Overloaded{
          [&](const Preemption& p) -> Decision {
            // Preemption spends nothing: under Slurm the job comes back by itself.
            if (ctx.under_slurm)
              return Requeue{"preempted (" + p.reason + "): checkpoint and requeue"};
            return GiveUp{kExitInterrupted, "interrupted (" + p.reason + ") after a checkpoint"};
          },
          [&](const FatalError& f) -> Decision {
            return GiveUp{kExitFatal, "not retryable (trainer exit " + std::to_string(f.exit_code) +
                                          "): " + f.message};
          },
          [&](const NodeLoss& n) -> Decision {
            // A membership change, not a failure of the training: exclude the node and carry on
            // on fewer data-parallel ranks when the plan allows, else let Slurm find nodes.
            if (ctx.nodes - 1 >= ctx.min_nodes) {
              Restart r;
              r.spends_budget = false;
              r.exclude = {n.node};
              r.delay_s = 0;
              r.reason = ctx.spares > 0 ? "node " + n.node +
                                              " lost: excluded, a spare node takes its place (" +
                                              std::to_string(ctx.spares - 1) + " spare(s) left)"
                                        : "node " + n.node + " lost: excluded, continuing on " +
                                              std::to_string(ctx.nodes - 1) + " nodes";
              return r;
            }
            if (ctx.under_slurm)
              return Requeue{"node " + n.node + " lost and the plan needs " +
                             std::to_string(ctx.min_nodes) + " nodes: requeue for new nodes"};
            return GiveUp{kExitNodesLost, "node " + n.node + " lost and the plan needs " +
                                              std::to_string(ctx.min_nodes) +
                                              " nodes; outside Slurm no requeue brings new ones"};
          },
          [&](const OutOfMemory& o) -> Decision {
            Remediation fix;
            if (ctx.micro_batch > 1) {
              fix.micro_batch = std::max(1, ctx.micro_batch / 2);
              fix.what = "micro batch " + std::to_string(ctx.micro_batch) + " -> " +
                         std::to_string(*fix.micro_batch);
            } else if (ctx.offload_supported && !ctx.offload) {
              fix.offload = true;
              fix.what = "offload on";
            } else {
              return GiveUp{kExitOomUnremediable,
                            "out of memory (" + o.source + (o.phase.empty() ? "" : ", " + o.phase) +
                                ") with micro batch 1 and nothing left to offload"};
            }
            Decision d =
                spend(history, budget, ctx, "out of memory (" + o.source + "): " + fix.what);
            if (auto* r = std::get_if<Restart>(&d)) r->remediation = fix;
            return d;
          },
          [&](const RankCrash& f) -> Decision {
            return spend(history, budget, ctx, describe(Failure{f}));
          },
          [&](const Hang& f) -> Decision {
            return spend(history, budget, ctx, describe(Failure{f}));
          },
          [&](const CommFailure& f) -> Decision {
            return spend(history, budget, ctx, describe(Failure{f}));
          },
          [&](const DiskFull& f) -> Decision {
            return GiveUp{kExitDiskFull, describe(Failure{f}) +
                                             "; free space, then continue the run (the newest "
                                             "good checkpoint is kept)"};
          },
          [&](const Incomplete& f) -> Decision {
            // The trainer resumes from its checkpoint and may finish: a restart that spends the
            // budget; one that keeps ending short without a new checkpoint stops as no progress.
            return spend(history, budget, ctx, describe(Failure{f}));
          },
      },
      failure);
}

std::string_view decision_kind(const Decision& d) {
  return std::visit(Overloaded{[](const Restart&) { return std::string_view("restart"); },
                               [](const Requeue&) { return std::string_view("requeue"); },
                               [](const GiveUp&) { return std::string_view("give_up"); }},
                    d);
}

std::string_view failure_class(const Failure& f) {
  return std::visit(Overloaded{[](const RankCrash&) { return std::string_view("crash"); },
                               [](const Hang&) { return std::string_view("hang"); },
                               [](const OutOfMemory&) { return std::string_view("oom"); },
                               [](const CommFailure&) { return std::string_view("comm"); },
                               [](const NodeLoss&) { return std::string_view("node_loss"); },
                               [](const Preemption&) { return std::string_view("preemption"); },
                               [](const FatalError&) { return std::string_view("fatal"); },
                               [](const Incomplete&) { return std::string_view("incomplete"); },
                               [](const DiskFull&) { return std::string_view("disk_full"); }},
                    f);
}

std::string describe(const Failure& f) {
  return std::visit(
      Overloaded{
          [](const RankCrash& c) {
            std::string s = c.rank >= 0 ? "rank " + std::to_string(c.rank) : std::string("a rank");
            s += c.signal != 0 ? " killed by signal " + std::to_string(c.signal)
                               : " exited with code " + std::to_string(c.exit_code);
            return c.message.empty() ? s : s + ": " + c.message;
          },
          [](const Hang& h) {
            std::string ranks;
            for (int r : h.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
            char buf[96];
            std::snprintf(buf, sizeof buf, "no heartbeat for %.1f s (timeout %.1f s)", h.silent_s,
                          h.timeout_s);
            std::string where;
            if (!h.phase.empty()) {
              where = " in " + h.phase;
              if (!h.trainer_phase.empty() && h.trainer_phase != h.phase) {
                where += " (" + h.trainer_phase + ")";
              }
            }
            return "rank(s) " + ranks + " hung" + where + ": " + buf;
          },
          [](const OutOfMemory& o) {
            std::string s = "out of memory (" + o.source + ")";
            if (o.rank >= 0) s += " on rank " + std::to_string(o.rank);
            if (!o.phase.empty()) s += " in " + o.phase;
            if (o.requested_bytes)
              s += ", requested " + std::to_string(*o.requested_bytes) + " bytes";
            return s;
          },
          [](const CommFailure& c) {
            return "communication failure" +
                   (c.rank >= 0 ? " on rank " + std::to_string(c.rank) : std::string()) +
                   (c.message.empty() ? "" : ": " + c.message);
          },
          [](const NodeLoss& n) { return "node " + n.node + " lost"; },
          [](const Preemption& p) { return "preempted: " + p.reason; },
          [](const FatalError& e) {
            return "fatal error (exit " + std::to_string(e.exit_code) + "): " + e.message;
          },
          [](const Incomplete& i) { return "training not finished: " + i.message; },
          [](const DiskFull& d) {
            return "the run directory's file system is full" +
                   (d.rank >= 0 ? " (rank " + std::to_string(d.rank) + ")" : std::string()) +
                   (d.message.empty() ? "" : ": " + d.message);
          },
      },
      f);
}

}  // namespace grpo::supervise
