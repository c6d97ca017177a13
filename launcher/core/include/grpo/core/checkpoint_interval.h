// How often to checkpoint (trainer.save_freq = auto; docs/trainer.md "Checkpoint interval"):
// the Young-Daly rule over the measured checkpoint cost and the run's mean time between
// failures, and that mean estimated from the failures the supervisor has seen. Pure.
#pragma once

#include <cstdint>
#include <string>

namespace grpo::core {

// Mean time between failures of a job, from the run's event log (docs/supervisor.md): with no
// failure yet, the prior (the cluster profile's node_mtbf_hours / nodes); after n >= 1
// failures in `observed_s` seconds of the run, observed_s / n.
struct MtbfEstimate {
  double seconds = 0;
  int failures = 0;
  std::string source;  // "prior" | "observed"
};
MtbfEstimate estimate_mtbf(double prior_s, int failures, double observed_s);

// The profile's per-node figure when a profile does not set node_mtbf_hours: Meta's Llama 3
// paper (arXiv:2407.21783, section 3.3.4) reports 419 unexpected interruptions in a 54-day
// snapshot on 16,384 H100s (2,048 nodes of 8): 54 x 24 h x 2,048 / 419 = 6,334.6 node-hours.
inline constexpr double kDefaultNodeMtbfHours = 6335.0;

struct SaveInterval {
  double seconds = 0;      // sqrt(2 x cost x mtbf), raised to min_interval_s
  std::int64_t steps = 1;  // seconds / step_s rounded to nearest, in [1, max_steps]
  std::string why;         // one line: the numbers and any bound that applied
};

// Young's first-order optimum (J. W. Young, "A first order approximation to the optimum
// checkpoint interval", CACM 17(9), 1974; J. T. Daly, FGCS 22(3), 2006): checkpoint every
// sqrt(2 C M) seconds of work, C the cost of one checkpoint to the training loop, M the mean
// time between failures. In steps of step_s seconds; at least min_interval_s (an asynchronous
// write must end before the next save is due) and at most max_steps (the rest of the run).
// cost_s >= 0, mtbf_s > 0, step_s > 0, max_steps >= 1.
SaveInterval young_daly_interval(double cost_s, double mtbf_s, double step_s, double min_interval_s,
                                 std::int64_t max_steps);

}  // namespace grpo::core
