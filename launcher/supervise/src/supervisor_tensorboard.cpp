#include "grpo/supervise/supervisor_tensorboard.h"
#include "grpo/core/run_dir.h"
#include "grpo/core/verl_keys.h"

#include <spdlog/spdlog.h>

#include <system_error>

namespace grpo::supervise {

bool trainer_argv_wants_tensorboard(const std::vector<std::string>& argv) {
  const std::string key = std::string(core::verl_key::kLogger) + "=";
  for (std::string_view arg : argv) {
    if (arg.rfind("--set=", 0) == 0) arg.remove_prefix(6);
    if (arg.rfind(key, 0) == 0 && arg.find("tensorboard") != std::string_view::npos) return true;
  }
  return false;
}

std::vector<tensorboard::Scalar> supervisor_scalars(const RunSummary& s) {
  int failures = 0;
  for (const auto& [cls, n] : s.failures) failures += n;
  std::vector<tensorboard::Scalar> out = {
      {"supervisor/restarts", static_cast<double>(s.restarts)},
      {"supervisor/failures", static_cast<double>(failures)},
      {"supervisor/requeues", static_cast<double>(s.requeues)},
      {"supervisor/attempts", static_cast<double>(s.attempt)},
      {"supervisor/lost_s", s.goodput.lost_at(s.last_time)},
  };
  for (const auto& [cls, n] : s.failures) {
    out.push_back({"supervisor/failures/" + cls, static_cast<double>(n)});
  }
  return out;
}

SupervisorTensorBoard::SupervisorTensorBoard(std::filesystem::path run_dir, bool enabled)
    : dir_(std::move(run_dir) / core::run_dir::kTensorboard), enabled_(enabled) {}

void SupervisorTensorBoard::observe(std::string_view type, const RunSummary& summary) {
  if (failed_) return;
  if (type != ev::kRunStarted && type != ev::kAttemptStarted && type != ev::kFailure &&
      type != ev::kDecision && type != ev::kRunFinished) {
    return;
  }
  if (!writer_) {
    std::error_code ec;
    if (!enabled_ && !std::filesystem::is_directory(dir_, ec)) return;
    auto w = tensorboard::EventFileWriter::create(dir_, "supervisor");
    if (!w.ok()) {
      failed_ = true;
      spdlog::warn("TensorBoard: {}", w.error().message);
      return;
    }
    writer_.emplace(std::move(w).value());
  }
  if (core::Status st = writer_->write_scalars(summary.last_step, supervisor_scalars(summary));
      !st.ok()) {
    failed_ = true;
    spdlog::warn("TensorBoard logging stopped: {}", st.error().message);
  }
}

}  // namespace grpo::supervise
