// Where a run's wall time went (docs/supervisor.md, "Goodput"), folded from the event log like
// the rest of the run summary: productive time is the wall time minus the time lost to
//   detection   from the last step before a failure to the failure's detection;
//   restart     from the failure to the start of the next step that counts (backoff, launch,
//               rendezvous, checkpoint load), and from a requeued job's new start to its first
//               step;
//   recomputed  the steps since the newest checkpoint (or the attempt's start) that the failure
//               threw away and that are done again;
//   checkpoint  training blocked by checkpoint saves (`blocking_s`; `seconds` for older logs);
//   requeue     from a requeue to the next supervisor's start (the job waiting in the queue).
// Each step counts once: the thrown-away first pass is lost, the second pass is productive.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace grpo::supervise {

struct Goodput {
  double detection_s = 0;
  double restart_s = 0;
  double recomputed_s = 0;
  double checkpoint_s = 0;
  double requeue_s = 0;
  // Open intervals: a failure not yet followed by a step; a requeue not yet followed by a start.
  std::optional<double> restart_since;
  std::optional<double> requeue_since;
  double last_step_time = 0;  // rank 0's newest step event
  double work_since = 0;      // the newest checkpoint, attempt start or recovery

  // Folds one event (its type, fields and envelope time).
  void apply(const std::string& type, const nlohmann::json& e, double time);
  // Lost time of the closed intervals.
  double lost() const { return detection_s + restart_s + recomputed_s + checkpoint_s + requeue_s; }
  // Lost time with the open intervals counted up to `now`.
  double lost_at(double now) const;
  // The restart and requeue figures with the open intervals counted up to `now`.
  double restart_at(double now) const;
  double requeue_at(double now) const;
  // {"detection_s": .., "restart_s": .., "recomputed_s": .., "checkpoint_s": .., "requeue_s": ..}
  nlohmann::json to_json(double now) const;
};

}  // namespace grpo::supervise
