#include "grpo/trainer/checkpoint_store.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>

#include "grpo/io/checkpoint_files.h"
#include "grpo/io/files.h"
#include "grpo/trainer/sha256.h"

namespace grpo::trainer {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

std::optional<std::int64_t> step_of(const std::string& name) {
  return io::checkpoint_step(name);
}

// Checkpoint files are as large as the model: no size limit on reads.
constexpr std::size_t kAnySize = std::numeric_limits<std::size_t>::max();

// Checkpoints are the run's weights: the owner's alone, like the run directory
// (docs/supervisor.md).
constexpr unsigned kDirMode = 0700;
constexpr unsigned kFileMode = 0600;

}  // namespace

CheckpointWriter::CheckpointWriter(fs::path tmp_dir, fs::path final_dir, std::int64_t step)
    : tmp_dir_(std::move(tmp_dir)), final_dir_(std::move(final_dir)), step_(step) {}

core::Status CheckpointWriter::write_file(const std::string& name, std::string_view bytes) {
  GRPO_TRY_STATUS(io::write_file_synced(tmp_dir_ / name, bytes, kFileMode));
  files_[name] = {{"bytes", bytes.size()}, {"sha256", sha256_hex(bytes)}};
  return core::ok_status();
}

CheckpointStore::CheckpointStore(fs::path root) : root_(std::move(root)) {}

std::string CheckpointStore::dir_name(std::int64_t step) {
  return io::checkpoint_dir_name(step);
}

core::Result<CheckpointWriter> CheckpointStore::begin(std::int64_t step) const {
  std::error_code ec;
  if (!fs::exists(root_, ec)) {
    fs::create_directories(root_.parent_path().empty() ? fs::path(".") : root_.parent_path(), ec);
    if (::mkdir(root_.c_str(), kDirMode) != 0 && errno != EEXIST) {
      return make_error(ErrorKind::kIo,
                        "cannot create " + root_.string() + ": " + std::strerror(errno));
    }
  }
  const fs::path tmp = root_ / (".tmp-" + dir_name(step) + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  if (::mkdir(tmp.c_str(), kDirMode) != 0) {
    return make_error(ErrorKind::kIo,
                      "cannot create " + tmp.string() + ": " + std::strerror(errno));
  }
  return CheckpointWriter(tmp, root_ / dir_name(step), step);
}

core::Result<fs::path> CheckpointStore::commit(CheckpointWriter&& w, const nlohmann::json& metadata,
                                               std::int64_t keep_last) const {
  nlohmann::json manifest = {{"format", "grpo-checkpoint"},
                             {"version", kCheckpointFormatVersion},
                             {"step", w.step_},
                             {"files", w.files_},
                             {"metadata", metadata}};
  GRPO_TRY_STATUS(io::write_file_synced(w.tmp_dir_ / core::run_dir::kManifest,
                                        core::json_text(manifest, 2) + "\n", kFileMode));
  GRPO_TRY_STATUS(io::sync_dir(w.tmp_dir_));

  std::error_code ec;
  if (fs::exists(w.final_dir_, ec)) {
    // A checkpoint of the same step from an earlier attempt: swapped for the new one in one
    // step, so that a checkpoint of this step exists at every moment; then the old is removed.
    GRPO_TRY(const fs::path old, io::exchange_dirs(w.tmp_dir_, w.final_dir_));
    fs::remove_all(old, ec);
  } else {
    fs::rename(w.tmp_dir_, w.final_dir_, ec);
    if (ec) {
      return make_error(ErrorKind::kIo, "cannot rename " + w.tmp_dir_.string() + " to " +
                                            w.final_dir_.string() + ": " + ec.message());
    }
  }
  GRPO_TRY_STATUS(io::sync_dir(root_));

  GRPO_TRY_STATUS(
      io::write_file_atomic(root_ / core::run_dir::kLatest, dir_name(w.step_) + "\n", kFileMode));

  auto all = list();
  const auto keep = static_cast<std::size_t>(std::max<std::int64_t>(keep_last, 1));
  for (std::size_t i = 0; i + keep < all.size(); ++i) {
    if (all[i].second == w.final_dir_) continue;
    fs::remove_all(all[i].second, ec);
  }
  return w.final_dir_;
}

std::string_view CheckpointInfo::bytes(std::string_view name) const {
  if (!files) return {};
  const auto it = files->find(name);
  return it == files->end() ? std::string_view() : it->second.bytes();
}

core::Result<CheckpointInfo> CheckpointStore::verify(const fs::path& dir) const {
  GRPO_TRY(io::VerifiedCheckpoint v, io::verify_checkpoint(dir, io::KeepMapped::kYes));
  return CheckpointInfo{std::move(v.dir), v.step, std::move(v.manifest), std::move(v.files)};
}

std::vector<std::pair<std::int64_t, fs::path>> CheckpointStore::list() const {
  return io::list_checkpoints(root_);
}

std::optional<CheckpointInfo> CheckpointStore::find_latest_valid(
    std::vector<SkippedCheckpoint>* skipped) const {
  const std::vector<fs::path> candidates = io::checkpoint_candidates(root_);
  // `latest` is a hint: a newer directory that verifies (latest not yet updated) still wins.
  std::optional<CheckpointInfo> best;
  std::vector<SkippedCheckpoint> local;
  for (const fs::path& dir : candidates) {
    if (best && step_of(dir.filename().string()).value_or(0) <= best->step) continue;
    auto info = verify(dir);
    if (info.ok()) {
      best = std::move(info).value();
    } else {
      local.push_back({dir.string(), info.error().message});
    }
  }
  if (skipped != nullptr) {
    for (auto& s : local) {
      if (!best || step_of(fs::path(s.path).filename().string()).value_or(0) > best->step) {
        skipped->push_back(std::move(s));
      }
    }
  }
  return best;
}

core::Result<std::string> CheckpointStore::read(const fs::path& dir, std::string_view name) const {
  return io::read_file(dir / name, kAnySize);
}

std::int64_t CheckpointStore::bytes_on_disk(const fs::path& dir) {
  std::int64_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir))
    bytes += static_cast<std::int64_t>(e.file_size());
  return bytes;
}

CheckpointPick pick_checkpoint(const CheckpointStore& store, const std::string& resume_mode,
                               const fs::path& resume_path, bool clean) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckpointPick pick;
  if (clean) store.remove_temporaries();
  if (resume_mode == "auto") {
    pick.found = store.find_latest_valid(&pick.skipped);
  } else if (resume_mode == "resume_path") {
    auto v = store.verify(resume_path);
    if (v.ok()) {
      pick.found = std::move(v).value();
    } else {
      pick.error = make_error(ErrorKind::kIo, "checkpoint " + resume_path.string() +
                                                  " does not verify: " + v.error().message);
    }
  }
  pick.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return pick;
}

void CheckpointStore::remove_temporaries() const {
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return;
  std::vector<fs::path> doomed;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    if (entry.path().filename().string().rfind(".tmp-", 0) == 0) doomed.push_back(entry.path());
  }
  for (const auto& p : doomed) fs::remove_all(p, ec);
}

}  // namespace grpo::trainer
