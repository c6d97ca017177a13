// Checkpoint directories on disk: atomic commit, checksummed manifests, the `latest` pointer,
// retention, and finding the newest checkpoint that verifies. LibTorch-free: it moves bytes; what
// the files contain is the trainer's business (docs/checkpoint-format.md).
//
// Layout under `root` (<run_dir>/checkpoints):
//   step_00000010/manifest.json   {"format": "grpo-checkpoint", "version": 1, "step": 10,
//                                  "files": {"model.safetensors": {"bytes": N, "sha256": "..."}},
//                                  "metadata": {...}}
//   step_00000010/<files>
//   latest                        "step_00000010\n", replaced atomically after the rename
//   .tmp-step_00000010-<pid>/     a checkpoint being written (never read; removed on start)
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grpo/core/result.h"
#include "grpo/io/checkpoint_files.h"

namespace grpo::trainer {

inline constexpr int kCheckpointFormatVersion = io::kCheckpointFormatVersion;

// One checkpoint being written into a temporary directory.
class CheckpointWriter {
 public:
  CheckpointWriter(std::filesystem::path tmp_dir, std::filesystem::path final_dir,
                   std::int64_t step);
  const std::filesystem::path& dir() const { return tmp_dir_; }
  std::int64_t step() const { return step_; }
  // Writes `name` in the temporary directory, fsyncs it and records its size and SHA-256.
  core::Status write_file(const std::string& name, std::string_view bytes);

 private:
  friend class CheckpointStore;
  std::filesystem::path tmp_dir_;
  std::filesystem::path final_dir_;
  std::int64_t step_;
  nlohmann::json files_ = nlohmann::json::object();
};

struct CheckpointInfo {
  std::filesystem::path dir;
  std::int64_t step = 0;
  nlohmann::json manifest;
  // Every listed file, mapped while it was verified: reading it reads the pages just hashed.
  std::shared_ptr<const io::CheckpointMappings> files;

  // Whether the manifest lists file `name`.
  bool has_file(const std::string& name) const { return manifest.at("files").contains(name); }
  // The verified bytes of listed file `name` (empty when not listed).
  std::string_view bytes(std::string_view name) const;
};

struct SkippedCheckpoint {
  std::string path;
  std::string reason;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::filesystem::path root);
  const std::filesystem::path& root() const { return root_; }

  static std::string dir_name(std::int64_t step);  // "step_00000010"

  // Creates the temporary directory. Errors: kIo.
  core::Result<CheckpointWriter> begin(std::int64_t step) const;
  // Writes manifest.json (with `metadata`), fsyncs files and directories, renames the temporary
  // directory to step_XXXXXXXX, points `latest` at it (write + fsync + rename), then deletes all
  // but the newest keep_last checkpoints. Returns the final directory. Errors: kIo.
  core::Result<std::filesystem::path> commit(CheckpointWriter&& writer,
                                             const nlohmann::json& metadata,
                                             std::int64_t keep_last) const;

  // Checks a checkpoint directory: manifest present and parseable, every listed file present with
  // the listed size and SHA-256 (io::verify_checkpoint, shared with grpo-launch export); the
  // files stay mapped in the result. Errors: kNotFound, kParse, kInvalidValue (the reason).
  core::Result<CheckpointInfo> verify(const std::filesystem::path& dir) const;

  // The newest checkpoint that verifies: `latest` first, then every step_* directory from the
  // highest step down. Each one skipped is appended to *skipped with its reason. nullopt when
  // none verifies (or none exists).
  std::optional<CheckpointInfo> find_latest_valid(std::vector<SkippedCheckpoint>* skipped) const;

  // Committed checkpoint directories, sorted by step ascending (not verified).
  std::vector<std::pair<std::int64_t, std::filesystem::path>> list() const;

  // Removes .tmp-* directories left by writers that died.
  void remove_temporaries() const;

  // The bytes of file `name` of the checkpoint in `dir` (io::read_file without a size limit:
  // checkpoint files are as large as the model). Errors: kNotFound, kIo.
  core::Result<std::string> read(const std::filesystem::path& dir, std::string_view name) const;
  // The bytes of every file in the checkpoint directory `dir`.
  static std::int64_t bytes_on_disk(const std::filesystem::path& dir);

 private:
  std::filesystem::path root_;
};

// What one rank finds for trainer.resume_mode by itself: every rank looks in the run directory
// on its own (before or while the process group forms) and the ranks then check that they found
// the same checkpoint (Checkpointer::resume, docs/checkpoint-format.md "Resume").
struct CheckpointPick {
  std::optional<CheckpointInfo> found;     // verified; its files stay mapped
  std::vector<SkippedCheckpoint> skipped;  // auto: newer checkpoints that do not verify
  std::optional<core::Error> error;        // resume_path: the checkpoint does not verify (kIo)
  double seconds = 0;                      // how long the look took
};

// resume_mode auto: the newest checkpoint that verifies (find_latest_valid); resume_path: the
// checkpoint `resume_path`, which must verify; anything else (disable): none. `clean`: remove
// the .tmp-* directories of dead writers first (one rank does it).
CheckpointPick pick_checkpoint(const CheckpointStore& store, const std::string& resume_mode,
                               const std::filesystem::path& resume_path, bool clean);

}  // namespace grpo::trainer
