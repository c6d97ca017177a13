// trainer.logger = ['console','tensorboard']: rank 0's telemetry events (docs/telemetry.md) as
// TensorBoard scalars under <run_dir>/tensorboard/ (docs/tensorboard.md has every tag).
// LibTorch-free; the event files are written by grpo_tensorboard (launcher/tensorboard).
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grpo/core/result.h"
#include "grpo/tensorboard/event_file.h"

namespace grpo::trainer {

// The TensorBoard scalars of one `step` event's fields, with verl's tags where verl has the
// same metric (critic/score/mean, actor/pg_loss, ...; docs/tensorboard.md). `task` names the
// validation tag (val-core/<task>/reward/mean@1); `world_size` turns the step's tokens/s into
// verl's per-device perf/throughput.
std::vector<tensorboard::Scalar> step_scalars(const nlohmann::json& fields, std::string_view task,
                                              int world_size);

class TensorBoardLog {
 public:
  // A new event file in <run_dir>/tensorboard/ (created when missing). Errors: kIo.
  static core::Result<TensorBoardLog> open(const std::filesystem::path& run_dir, std::string task,
                                           int world_size);

  // One telemetry event: `step` events become step_scalars, the `validation` event at the start
  // of GRPO its val-core scalar; other types are ignored. Errors: kIo.
  core::Status observe(std::string_view type, const nlohmann::json& fields);

  const std::filesystem::path& path() const { return writer_.path(); }

 private:
  TensorBoardLog(tensorboard::EventFileWriter writer, std::string task, int world_size)
      : writer_(std::move(writer)), task_(std::move(task)), world_size_(world_size) {}

  tensorboard::EventFileWriter writer_;
  std::string task_;
  int world_size_ = 1;
};

}  // namespace grpo::trainer
