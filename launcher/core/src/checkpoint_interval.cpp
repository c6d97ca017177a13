#include "grpo/core/checkpoint_interval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace grpo::core {

MtbfEstimate estimate_mtbf(double prior_s, int failures, double observed_s) {
  if (failures <= 0 || observed_s <= 0) return MtbfEstimate{prior_s, 0, "prior"};
  return MtbfEstimate{observed_s / failures, failures, "observed"};
}

SaveInterval young_daly_interval(double cost_s, double mtbf_s, double step_s, double min_interval_s,
                                 std::int64_t max_steps) {
  SaveInterval out;
  const double optimum = std::sqrt(2.0 * std::max(cost_s, 0.0) * mtbf_s);
  out.seconds = std::max(optimum, min_interval_s);
  const double steps = std::round(out.seconds / step_s);
  const std::int64_t cap = std::max<std::int64_t>(max_steps, 1);
  out.steps = steps >= static_cast<double>(cap)
                  ? cap
                  : std::max<std::int64_t>(1, static_cast<std::int64_t>(steps));
  char buf[256];
  std::snprintf(buf, sizeof buf, "sqrt(2 x %.4g s x %.4g s) = %.4g s / %.4g s per step", cost_s,
                mtbf_s, optimum, step_s);
  out.why = buf;
  if (min_interval_s > optimum) {
    std::snprintf(buf, sizeof buf, "; raised to %.4g s (the previous write took that long)",
                  min_interval_s);
    out.why += buf;
  }
  if (steps >= static_cast<double>(cap)) {
    out.why += "; capped at the " + std::to_string(cap) + " step(s) left";
  } else if (steps < 1) {
    out.why += "; at least 1 step";
  }
  return out;
}

}  // namespace grpo::core
