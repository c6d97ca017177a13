#include "grpo/trainer/telemetry.h"
#include "grpo/core/json_text.h"
#include "grpo/core/telemetry_events.h"

#include <unistd.h>

namespace grpo::trainer {

double unix_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

Telemetry::Telemetry(std::FILE* out, int rank, int world_size)
    : out_(out), rank_(rank), world_size_(world_size) {}

void Telemetry::set_world(int rank, int world_size) {
  std::lock_guard lock(mu_);
  rank_ = rank;
  world_size_ = world_size;
}

void Telemetry::emit(std::string_view type, const nlohmann::json& fields) {
  nlohmann::json ev = {
      {"schema", kTelemetrySchemaVersion}, {"type", type}, {"time", unix_time_now()}};
  {
    std::lock_guard lock(mu_);
    if (muted_ || out_ == nullptr) return;
    ev["rank"] = rank_;
    ev["world_size"] = world_size_;
    ev["pid"] = static_cast<long>(::getpid());
    if (fields.is_object()) {
      for (const auto& [k, v] : fields.items()) ev[k] = v;
    }
    const std::string line = core::json_text(ev) + "\n";
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }
  if (observer_) observer_(type, fields);
}

void Telemetry::heartbeat(std::int64_t step, std::string_view phase, const nlohmann::json& extra) {
  nlohmann::json f = {{"step", step}, {"phase", phase}};
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) f[k] = v;
  }
  emit(core::telemetry::event::kHeartbeat, f);
  std::lock_guard lock(mu_);
  last_beat_ = std::chrono::steady_clock::now();
}

void Telemetry::maybe_heartbeat(std::int64_t step, std::string_view phase,
                                const nlohmann::json& extra) {
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_beat_).count() < interval_s_) return;
  }
  heartbeat(step, phase, extra);
}

void Telemetry::set_heartbeat_interval(double seconds) {
  std::lock_guard lock(mu_);
  interval_s_ = seconds;
}

void Telemetry::set_observer(Observer observer) {
  std::lock_guard lock(mu_);
  observer_ = std::move(observer);
}

void Telemetry::set_muted(bool muted) {
  std::lock_guard lock(mu_);
  muted_ = muted;
}

}  // namespace grpo::trainer
