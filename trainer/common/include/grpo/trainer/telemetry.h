// The trainer's machine-readable events: one JSON object per line on stdout, read by the
// supervisor (docs/supervisor.md). Human logs go to stderr through spdlog. Schema:
// docs/telemetry.md. LibTorch-free and thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grpo/core/telemetry_events.h"

namespace grpo::trainer {

// The event types and the envelope's version: grpo/core/telemetry_events.h (the contract the
// supervisor reads with).
inline constexpr int kTelemetrySchemaVersion = core::telemetry::kSchemaVersion;

class Telemetry {
 public:
  // Writes to `out` (stdout in the trainer), flushing after every event.
  Telemetry(std::FILE* out, int rank, int world_size);

  void set_world(int rank, int world_size);

  // {"schema": 1, "type": type, "time": unix seconds, "rank": r, "world_size": w, "pid": p,
  //  ...fields}. Fields must be an object (or null).
  void emit(std::string_view type, const nlohmann::json& fields = nullptr);

  // A heartbeat now, and remembers the phase for maybe_heartbeat.
  void heartbeat(std::int64_t step, std::string_view phase, const nlohmann::json& extra = nullptr);
  // A heartbeat when at least interval_s passed since the last one.
  void maybe_heartbeat(std::int64_t step, std::string_view phase,
                       const nlohmann::json& extra = nullptr);
  void set_heartbeat_interval(double seconds);

  // Muted telemetry writes nothing (the hang fault: a hung rank stops beating).
  void set_muted(bool muted);

  // Called with every event's type and fields after it is written, outside the lock (rank 0's
  // TensorBoard log, tensorboard_log.h). Set it before other threads emit.
  using Observer = std::function<void(std::string_view type, const nlohmann::json& fields)>;
  void set_observer(Observer observer);

 private:
  std::FILE* out_;
  int rank_;
  int world_size_;
  double interval_s_ = 1.0;
  bool muted_ = false;
  std::chrono::steady_clock::time_point last_beat_{};
  Observer observer_;
  std::mutex mu_;
};

// Seconds since the Unix epoch, with sub-millisecond resolution.
double unix_time_now();

}  // namespace grpo::trainer
