// Per-phase hang timeouts learned from the run (docs/supervisor.md, "Hang timeout"), as pure
// code: no clock, no I/O.
//
// A rank's silence (time since its newest event) is bounded by the limit of the phase it is in.
// The phases the supervisor tells apart ("timeout classes"):
//   startup     until the rank's first `step` event of the attempt (exec, rendezvous,
//               checkpoint load, GRPO start-up work, the first step)
//   rollout     heartbeat phase rollout, old_logprob or ref_logprob
//   update      heartbeat phase update or sft
//   validation  heartbeat phase validation
//   checkpoint  heartbeat phase checkpoint
//   between     anything else: phase start, and from a `step` event to the next heartbeat
//
// Calibration: every silence that ended with an event (the rank made progress) is a sample of
// the class the rank was in, except the silences of the first `warmup_steps` steps of every
// attempt (start-up samples excepted: start-up is the first step). The limit of a class is
//   fixed       --phase-timeout CLASS=S                              when given
//   calibrated  max(floor, factor x M)                               once it has min_samples
//   default     the uncalibrated limit the caller passes (--hang-timeout, or the formula of
//               monitor.h)
// with M = the longest sample of the class over the run (all ranks, all attempts), factor = 4,
// floor = --hang-timeout when given, else 30 s (checkpoint 60 s; start-up: --startup-timeout).
// The longest sample is the quantile used: samples are few per step and a missed long phase
// costs a false kill, a too generous limit only detection time.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "grpo/core/result.h"

namespace grpo::supervise {

enum class PhaseClass { kStartup, kRollout, kUpdate, kValidation, kCheckpoint, kBetween };
inline constexpr int kPhaseClasses = 6;

// "startup", "rollout", "update", "validation", "checkpoint", "between".
std::string_view to_string(PhaseClass c);
std::optional<PhaseClass> parse_phase_class(std::string_view name);
// The class of a trainer heartbeat phase once the rank is past start-up ("" and "step": between).
PhaseClass phase_class_of(std::string_view trainer_phase);

struct PhaseTimeoutOptions {
  std::map<PhaseClass, double> fixed;  // --phase-timeout CLASS=S
  double factor = 4;
  int warmup_steps = 2;  // per attempt; the first one is start-up
  int min_samples = 3;   // start-up: 1 (one per attempt)
  double floor_s = 30;
  double checkpoint_floor_s = 60;
};

// "CLASS=SECONDS" of --phase-timeout. Errors: kInvalidValue naming the text.
core::Result<std::pair<PhaseClass, double>> parse_phase_timeout(std::string_view text);

// The longest silence seen per class and the number of samples, over the run.
class PhaseStats {
 public:
  void add(PhaseClass c, double silence_s);
  std::optional<double> longest(PhaseClass c) const;
  std::int64_t samples(PhaseClass c) const { return n_[index(c)]; }

  // The `timeouts_calibrated` event's `longest_s` and `samples` (docs/events.md), and back
  // (replay: a restarted supervisor continues from the recorded values; malformed entries are
  // skipped).
  nlohmann::json to_json() const;
  void restore(const nlohmann::json& event);

 private:
  static std::size_t index(PhaseClass c) { return static_cast<std::size_t>(c); }
  std::array<double, kPhaseClasses> longest_{};
  std::array<std::int64_t, kPhaseClasses> n_{};
};

// What the limit of a class is based on.
enum class LimitSource { kFixed, kCalibrated, kDefault };

struct PhaseLimit {
  double seconds = 0;
  LimitSource source = LimitSource::kDefault;
};

// The limit of class `c` (rule in the header comment). `floor_s`: the floor of calibrated limits
// (--hang-timeout when given, else the options' floors; the caller passes --startup-timeout for
// start-up); `default_s`: the limit while uncalibrated.
PhaseLimit phase_limit(PhaseClass c, const PhaseTimeoutOptions& o, const PhaseStats& stats,
                       double floor_s, double default_s);

// Whether the calibrated limits `now` differ enough from the ones last recorded to record them
// again: a class newly calibrated, or its limit grown by 10% or more. Both maps: class -> seconds.
bool calibration_changed(const std::map<PhaseClass, double>& recorded,
                         const std::map<PhaseClass, double>& now);

}  // namespace grpo::supervise
