#include "grpo/runlog/goodput.h"

#include <algorithm>

#include "grpo/runlog/event_log.h"

namespace grpo::supervise {

using nlohmann::json;

namespace {

double number_or(const json& e, const char* key, double fallback) {
  const auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

void Goodput::apply(const std::string& type, const json& e, double time) {
  if (type == ev::kRunStarted) {
    if (requeue_since) {
      requeue_s += std::max(0.0, time - *requeue_since);
      requeue_since.reset();
      restart_since = time;  // the new supervisor launches until the first step
    }
  } else if (type == ev::kAttemptStarted) {
    work_since = std::max(work_since, time);
  } else if (type == ev::kCheckpointSaved) {
    work_since = std::max(work_since, time);
    checkpoint_s += std::max(0.0, number_or(e, "blocking_s", number_or(e, "seconds", 0.0)));
  } else if (type == ev::kStep) {
    if (number_or(e, "rank", 0.0) != 0.0) return;
    if (restart_since) {
      // The step's own time is productive: the restart ends where it began.
      const double began = time - number_or(e, "wall_s", number_or(e, "step_s", 0.0));
      const double end = std::clamp(began, *restart_since, time);
      restart_s += end - *restart_since;
      restart_since.reset();
      work_since = std::max(work_since, end);
    }
    last_step_time = time;
  } else if (type == ev::kFailure) {
    if (restart_since) return;  // the recovery from an earlier failure failed: still restarting
    const double last = std::max(last_step_time, work_since);
    if (last_step_time > work_since) recomputed_s += last_step_time - work_since;
    detection_s += std::max(0.0, time - last);
    restart_since = time;
  } else if (type == ev::kRunFinished) {
    if (restart_since) {
      restart_s += std::max(0.0, time - *restart_since);
      restart_since.reset();
    }
    // A crafted log's non-string state is not a requeue (json::value would throw on it).
    const auto state = e.find("state");
    if (state != e.end() && state->is_string() && *state == "requeued") requeue_since = time;
  }
}

double Goodput::restart_at(double now) const {
  return restart_s + (restart_since ? std::max(0.0, now - *restart_since) : 0.0);
}

double Goodput::requeue_at(double now) const {
  return requeue_s + (requeue_since ? std::max(0.0, now - *requeue_since) : 0.0);
}

double Goodput::lost_at(double now) const {
  return detection_s + restart_at(now) + recomputed_s + checkpoint_s + requeue_at(now);
}

json Goodput::to_json(double now) const {
  return {{"detection_s", detection_s},
          {"restart_s", restart_at(now)},
          {"recomputed_s", recomputed_s},
          {"checkpoint_s", checkpoint_s},
          {"requeue_s", requeue_at(now)}};
}

}  // namespace grpo::supervise
