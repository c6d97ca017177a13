// Checkpoint directories read-only (docs/checkpoint-format.md): the step_XXXXXXXX names, the
// `latest` pointer, and verifying a directory against its manifest.json (sizes and SHA-256 of
// every listed file). The trainer's CheckpointStore (which also writes them) and
// `grpo-launch export` (which does not link the trainer) both read checkpoints through these.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grpo/core/result.h"

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

// The order in which to try them for "the newest good one": the directory `latest` names first
// (a hint), then every step_* directory from the highest step down, each once.
std::vector<std::filesystem::path> checkpoint_candidates(const std::filesystem::path& root);

struct VerifiedCheckpoint {
  std::filesystem::path dir;
  std::int64_t step = 0;
  nlohmann::json manifest;
};

// Checks a checkpoint directory: manifest.json present and parseable, of this format and
// version, and every listed file present with the listed size and SHA-256 (each file is
// memory-mapped and hashed in place). Errors: kNotFound (no manifest, a missing file), kParse,
// kInvalidValue (size or SHA-256 mismatch, another version): the reason, without the directory.
core::Result<VerifiedCheckpoint> verify_checkpoint(const std::filesystem::path& dir);

}  // namespace grpo::io
