#include "grpo/supervise/phase_timeouts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "grpo/core/text.h"

namespace grpo::supervise {

using core::ErrorKind;
using core::make_error;
using nlohmann::json;

namespace {

constexpr std::array<std::pair<PhaseClass, std::string_view>, kPhaseClasses> kNames = {{
    {PhaseClass::kStartup, "startup"},
    {PhaseClass::kRollout, "rollout"},
    {PhaseClass::kUpdate, "update"},
    {PhaseClass::kValidation, "validation"},
    {PhaseClass::kCheckpoint, "checkpoint"},
    {PhaseClass::kBetween, "between"},
}};

std::vector<std::string> class_names() {
  std::vector<std::string> v;
  for (const auto& [c, n] : kNames) v.emplace_back(n);
  return v;
}

}  // namespace

std::string_view to_string(PhaseClass c) {
  for (const auto& [k, n] : kNames) {
    if (k == c) return n;
  }
  return "between";
}

std::optional<PhaseClass> parse_phase_class(std::string_view name) {
  for (const auto& [k, n] : kNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

PhaseClass phase_class_of(std::string_view p) {
  if (p == "rollout" || p == "old_logprob" || p == "ref_logprob") return PhaseClass::kRollout;
  if (p == "update" || p == "sft") return PhaseClass::kUpdate;
  if (p == "validation") return PhaseClass::kValidation;
  if (p == "checkpoint") return PhaseClass::kCheckpoint;
  return PhaseClass::kBetween;
}

core::Result<std::pair<PhaseClass, double>> parse_phase_timeout(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    return make_error(ErrorKind::kInvalidValue,
                      "'" + std::string(text) + "': expected PHASE=SECONDS, e.g. rollout=600");
  }
  const std::string_view name = core::trim(text.substr(0, eq));
  const std::string_view value = core::trim(text.substr(eq + 1));
  const auto c = parse_phase_class(name);
  if (!c) {
    return make_error(ErrorKind::kInvalidValue,
                      "'" + std::string(text) + "': unknown phase '" + std::string(name) + "'" +
                          core::did_you_mean(name, class_names()) +
                          " (startup, rollout, update, validation, checkpoint, between)");
  }
  double seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || end != value.data() + value.size() || !(seconds > 0) ||
      !std::isfinite(seconds) || seconds > 7 * 86400.0) {
    return make_error(
        ErrorKind::kInvalidValue,
        "'" + std::string(text) + "': the seconds must be a number above 0 and at most 604800");
  }
  return std::make_pair(*c, seconds);
}

void PhaseStats::add(PhaseClass c, double silence_s) {
  if (!(silence_s >= 0) || !std::isfinite(silence_s)) return;
  longest_[index(c)] = std::max(longest_[index(c)], silence_s);
  ++n_[index(c)];
}

std::optional<double> PhaseStats::longest(PhaseClass c) const {
  if (n_[index(c)] == 0) return std::nullopt;
  return longest_[index(c)];
}

json PhaseStats::to_json() const {
  json longest = json::object(), samples = json::object();
  for (const auto& [c, name] : kNames) {
    if (n_[index(c)] == 0) continue;
    longest[std::string(name)] = longest_[index(c)];
    samples[std::string(name)] = n_[index(c)];
  }
  return json{{"longest_s", longest}, {"samples", samples}};
}

void PhaseStats::restore(const json& e) {
  if (!e.is_object() || !e.contains("longest_s") || !e.contains("samples")) return;
  const json& longest = e["longest_s"];
  const json& samples = e["samples"];
  if (!longest.is_object() || !samples.is_object()) return;
  for (const auto& [name, v] : longest.items()) {
    const auto c = parse_phase_class(name);
    if (!c || !v.is_number() || !samples.contains(name) || !samples[name].is_number_integer()) {
      continue;
    }
    const double s = v.get<double>();
    const auto n = samples[name].get<std::int64_t>();
    if (!(s >= 0) || !std::isfinite(s) || n < 1) continue;
    longest_[index(*c)] = std::max(longest_[index(*c)], s);
    n_[index(*c)] = std::max(n_[index(*c)], n);
  }
}

PhaseLimit phase_limit(PhaseClass c, const PhaseTimeoutOptions& o, const PhaseStats& stats,
                       double floor_s, double default_s) {
  if (auto it = o.fixed.find(c); it != o.fixed.end()) return {it->second, LimitSource::kFixed};
  const std::int64_t need = c == PhaseClass::kStartup ? 1 : std::max(1, o.min_samples);
  const auto longest = stats.longest(c);
  if (longest && stats.samples(c) >= need) {
    return {std::max(floor_s, o.factor * *longest), LimitSource::kCalibrated};
  }
  return {default_s, LimitSource::kDefault};
}

bool calibration_changed(const std::map<PhaseClass, double>& recorded,
                         const std::map<PhaseClass, double>& now) {
  for (const auto& [c, s] : now) {
    const auto it = recorded.find(c);
    if (it == recorded.end() || s >= 1.1 * it->second) return true;
  }
  return false;
}

}  // namespace grpo::supervise
