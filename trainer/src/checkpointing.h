// Checkpoint save and resume of the training state (internal to grpo_trainer). What a checkpoint
// holds (docs/checkpoint-format.md): the model, the optimizer moments, the frozen reference once
// GRPO started, every rank's sampling RNG state, trainer_state.json and config.toml. Rank 0
// writes the files through CheckpointStore (atomic commit, manifests, retention). On resume every
// rank verifies and reads the checkpoint itself when it sees the same one as every other rank
// (a shared run directory); otherwise rank 0 reads it and broadcasts it, so only rank 0 needs to
// see the run directory.
//
// Asynchronous saves (trainer.async_save, docs/checkpoint-format.md "Asynchronous saves"): every
// collective of a save (the RNG all-reduce, the gathers of the unsharded tensors, the outcome's
// broadcast) stays on the training thread, in the same order on every rank; rank 0 copies what
// it gathered to host memory and one background thread serializes, hashes, writes and commits
// it, touching no communicator. The next save, the end of the run and every stop wait for it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/trainer/checkpoint_store.h"
#include "run_context.h"

namespace grpo::trainer {

// What rank 0 hands to the writer: everything a checkpoint holds (checkpointing.cpp).
struct StagedCheckpoint;

class Checkpointer {
 public:
  // Checkpoints live in `root` (<run_dir>/checkpoints).
  Checkpointer(RunContext& ctx, std::filesystem::path root);
  // Waits for a background write (without telling the other ranks).
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // This rank's look for the checkpoint to resume, started earlier (look_for_checkpoint): resume()
  // takes its result instead of looking then.
  void look_ahead(std::future<CheckpointPick> pick);

  // Loads the checkpoint trainer.resume_mode asks for into `st` (auto: the newest that
  // verifies, each newer one skipped reported; resume_path: that one, which must verify;
  // disable: none). Every rank finds and verifies it itself (look_ahead), the ranks agree on it
  // (one all-reduce), and each reads its own part of the files it verified; ranks that found
  // different checkpoints (a run directory not shared) take rank 0's by broadcast. Without a
  // checkpoint every rank takes rank 0's initial weights. With the same number of ranks the
  // sampling streams resume exactly; with another they are re-seeded. Errors: kIo (a rank could
  // not verify a resume_path), kInvalidValue (tensors do not match the model), the
  // communicator's.
  core::Status resume(TrainState& st);

  // Writes the checkpoint of step `s` (phase checkpoint); `reason`: periodic | final | request |
  // stop. Collective. Waits for the previous save first (wait()). With trainer.async_save a
  // periodic save returns once rank 0 staged its copy, and rank 0's background thread writes
  // it; otherwise (and for final, request and stop saves) it returns once the checkpoint is
  // committed and every rank learned that it worked. Injected torn_ckpt and corrupt_ckpt faults
  // fire in the writer. Returns the seconds the training loop was stopped. Errors: kIo (rank 0
  // failed, this save or the previous one), the communicator's.
  core::Result<double> save(TrainState& st, std::int64_t s, const std::string& reason);

  // Collective when a save is pending (every rank knows that alike): rank 0 waits for the
  // background write (with heartbeats), then broadcasts whether it committed. Errors: kIo.
  core::Status wait();
  // Rank 0 waits for a background write, telling no other rank (before an injected fault ends
  // the process: the faults' tests expect every earlier checkpoint on disk). Not collective.
  void drain();
  // Rank 0: seconds the newest finished write took (0 before one finished).
  double last_write_s() const { return last_write_s_; }

 private:
  core::Status broadcast_bytes(std::string& bytes, int root);
  // Rank 0: serializes, hashes, writes and commits `staged`, emits checkpoint_saved.
  // Writes and commits; on failure nothing of it is left behind (its temporary directory is
  // removed, so a full disk is not kept full by a half-written checkpoint).
  core::Result<std::filesystem::path> write(StagedCheckpoint& staged);
  core::Result<std::filesystem::path> write_files(StagedCheckpoint& staged);
  // Rank 0's outcome of a write, on every rank (a collective); `what` prefixes rank 0's error.
  core::Status share_outcome(const core::Status& written, const std::string& what);

  RunContext& ctx_;
  CheckpointStore store_;
  bool pending_ = false;  // an asynchronous save awaits wait() (every rank)
  std::int64_t pending_step_ = 0;
  // Rank 0's background write: its thread and its outcome.
  std::thread writer_;
  std::future<core::Status> outcome_;
  std::shared_ptr<double> write_s_;  // set by the writer
  std::vector<at::Tensor> staging_;  // rank 0's host copies, reused by every asynchronous save
  double last_write_s_ = 0;
  std::future<CheckpointPick> ahead_;  // look_ahead's
};

// Starts pick_checkpoint for trainer.resume_mode on a thread (rank 0 also removes dead writers'
// temporaries), so that finding and verifying the checkpoint overlaps with the rendezvous.
std::future<CheckpointPick> look_for_checkpoint(const TrainerConfig& cfg,
                                                std::filesystem::path root, int rank);

}  // namespace grpo::trainer
