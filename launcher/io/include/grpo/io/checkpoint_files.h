// Checkpoint directories read-only (docs/checkpoint-format.md): the step_XXXXXXXX names, the
// `latest` pointer, and verifying a directory against its manifest.json (sizes and SHA-256 of
// every listed file). The trainer's CheckpointStore (which also writes them) and
// `grpo-launch export` (which does not link the trainer) both read checkpoints through these.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grpo/core/result.h"
#include "grpo/io/mapped_file.h"

namespace grpo::io {

inline constexpr int kCheckpointFormatVersion = 1;

// "step_00000010".
std::string checkpoint_dir_name(std::int64_t step);
// The step of a directory named step_<digits>; nullopt for any other name.
std::optional<std::int64_t> checkpoint_step(std::string_view dir_name);

// The committed checkpoint directories under `root` (<run_dir>/checkpoints), sorted by step
// ascending (not verified). Empty when `root` is not a directory.
std::vector<std::pair<std::int64_t, std::filesystem::path>> list_checkpoints(
    const std::filesystem::path& root);

// The newest of them that holds its manifest.json (committed, not verified): its step and
// folder, or nullopt when there is none. The supervisor's progress and health checks read it.
std::optional<std::pair<std::int64_t, std::filesystem::path>> newest_committed_checkpoint(
    const std::filesystem::path& root);

// The order in which to try them for "the newest good one": the directory `latest` names first
// (a hint), then every step_* directory from the highest step down, each once.
std::vector<std::filesystem::path> checkpoint_candidates(const std::filesystem::path& root);

// The listed files of a verified checkpoint, still mapped: what was hashed is what is read.
using CheckpointMappings = std::map<std::string, MappedFile, std::less<>>;

struct VerifiedCheckpoint {
  std::filesystem::path dir;
  std::int64_t step = 0;
  nlohmann::json manifest;
  // With KeepMapped::kYes: every listed file, mapped (shared: the struct stays copyable).
  std::shared_ptr<const CheckpointMappings> files;

  // The bytes of listed file `name` (empty unless kept mapped and listed).
  std::string_view bytes(std::string_view name) const;
};

enum class KeepMapped { kNo, kYes };

// Checks a checkpoint directory: manifest.json present and parseable, of this format and
// version, and every listed file present with the listed size and SHA-256 (each file is
// memory-mapped and hashed in place). With KeepMapped::kYes the mappings are returned, so a
// reader parses the very pages it hashed: one pass over each file (docs/checkpoint-format.md).
// Errors: kNotFound (no manifest, a missing file), kParse, kInvalidValue (size or SHA-256
// mismatch, another version): the reason, without the directory.
core::Result<VerifiedCheckpoint> verify_checkpoint(const std::filesystem::path& dir,
                                                   KeepMapped keep = KeepMapped::kNo);

}  // namespace grpo::io
