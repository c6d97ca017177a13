// Step events of many ranks folded into one event per step (docs/events.md, `step_ranks`):
// at thousands of ranks the supervisor keeps the step events of the first few ranks as they
// come and, for every rank, the spread of the per-rank figures (min, median, max and which rank
// had the extremes), so the event log grows with the steps, not with steps x ranks. Pure: no
// clock, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace grpo::supervise {

// The per-rank figures of a step event that are aggregated (those present in the events).
inline constexpr const char* kAggregatedStepFields[] = {"step_s",   "wall_s",       "comm_s",
                                                        "update_s", "peak_rss_mib", "tokens_per_s"};

class StepAggregator {
 public:
  explicit StepAggregator(int world_size);

  // Adds `rank`'s step event; returns the `step_ranks` events (their fields, without the
  // envelope) of the steps that are now complete: every rank reported them, or a step two newer
  // has begun (a rank that never reports a step does not hold its summary back forever).
  std::vector<nlohmann::json> add(int rank, const nlohmann::json& step_event);
  // The summaries of every step still open (the attempt ended), oldest first.
  std::vector<nlohmann::json> flush();

 private:
  struct Open {
    int reported = 0;
    std::vector<char> seen;
    std::map<std::string, std::vector<std::pair<double, int>>> values;  // field -> (value, rank)
  };
  nlohmann::json summarize(std::int64_t step, Open& open) const;

  int world_;
  std::map<std::int64_t, Open> open_;
};

}  // namespace grpo::supervise
