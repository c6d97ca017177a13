// Checkpoint save and resume of the training state (internal to grpo_trainer). What a checkpoint
// holds (docs/checkpoint-format.md): the model, the optimizer moments, the frozen reference once
// GRPO started, every rank's sampling RNG state, trainer_state.json and config.toml. Rank 0 reads
// and writes the files through CheckpointStore (atomic commit, manifests, retention); the other
// ranks get everything by broadcast, so only rank 0 needs to see the run directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "grpo/core/result.h"
#include "grpo/trainer/checkpoint_store.h"
#include "run_context.h"

namespace grpo::trainer {

class Checkpointer {
 public:
  // Checkpoints live in `root` (<run_dir>/checkpoints).
  Checkpointer(RunContext& ctx, std::filesystem::path root);

  // Loads the checkpoint trainer.resume_mode asks for into `st` (auto: the newest that
  // verifies, each newer one skipped reported; resume_path: that one, which must verify;
  // disable: none). Without a checkpoint every rank takes rank 0's initial weights. With the
  // same number of ranks the sampling streams resume exactly; with another they are re-seeded.
  // Errors: kIo (rank 0 could not read or verify), kInvalidValue (tensors do not match the
  // model), the communicator's.
  core::Status resume(TrainState& st);

  // Writes the checkpoint of step `s` (phase checkpoint); `reason`: periodic | final | request |
  // stop. Collective: rank 0 writes, every rank learns whether it worked. Injected torn_ckpt and
  // corrupt_ckpt faults fire here. Errors: kIo (rank 0 failed), the communicator's.
  core::Status save(TrainState& st, std::int64_t s, const std::string& reason);

 private:
  core::Status broadcast_bytes(std::string& bytes, int root);

  RunContext& ctx_;
  CheckpointStore store_;
};

}  // namespace grpo::trainer
