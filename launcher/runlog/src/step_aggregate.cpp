#include "grpo/runlog/step_aggregate.h"

#include <algorithm>
#include <cmath>

namespace grpo::supervise {

using nlohmann::json;

namespace {

// How far behind the newest step a step may stay open waiting for ranks.
constexpr std::int64_t kOpenSteps = 2;

}  // namespace

StepAggregator::StepAggregator(int world_size) : world_(std::max(1, world_size)) {}

std::vector<json> StepAggregator::add(int rank, const json& e) {
  std::vector<json> done;
  if (rank < 0 || rank >= world_ || !e.is_object() || !e.contains("step") ||
      !e["step"].is_number_integer()) {
    return done;
  }
  const auto step = e["step"].get<std::int64_t>();
  Open& o = open_[step];
  if (o.seen.empty()) o.seen.assign(static_cast<std::size_t>(world_), 0);
  if (!o.seen[static_cast<std::size_t>(rank)]) {
    o.seen[static_cast<std::size_t>(rank)] = 1;
    ++o.reported;
  }
  for (const char* field : kAggregatedStepFields) {
    const auto it = e.find(field);
    if (it == e.end() || !it->is_number()) continue;
    const double v = it->get<double>();
    if (std::isfinite(v)) o.values[field].emplace_back(v, rank);
  }
  // Complete steps, and steps left behind by the newest one, leave in step order.
  const std::int64_t newest = open_.rbegin()->first;
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.reported < world_ && it->first > newest - kOpenSteps) {
      ++it;
      continue;
    }
    done.push_back(summarize(it->first, it->second));
    it = open_.erase(it);
  }
  return done;
}

std::vector<json> StepAggregator::flush() {
  std::vector<json> done;
  for (auto& [step, o] : open_) done.push_back(summarize(step, o));
  open_.clear();
  return done;
}

json StepAggregator::summarize(std::int64_t step, Open& o) const {
  json out = {{"step", step}, {"ranks", o.reported}, {"missing", world_ - o.reported}};
  for (auto& [field, values] : o.values) {
    // Ties go to the lowest rank: sort by value, then rank.
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    const double median =
        n % 2 == 1 ? values[n / 2].first : 0.5 * (values[n / 2 - 1].first + values[n / 2].first);
    auto top = values.back();
    for (auto it = values.rbegin(); it != values.rend() && it->first == top.first; ++it) {
      top = *it;  // the lowest rank among the equal maxima
    }
    out[field] = {{"min", values.front().first},
                  {"min_rank", values.front().second},
                  {"median", median},
                  {"max", top.first},
                  {"max_rank", top.second}};
  }
  return out;
}

}  // namespace grpo::supervise
