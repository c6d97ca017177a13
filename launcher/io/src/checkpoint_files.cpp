#include "grpo/io/checkpoint_files.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "grpo/io/files.h"
#include "grpo/io/mapped_file.h"
#include "grpo/io/sha256.h"

namespace grpo::io {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

std::string checkpoint_dir_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

std::optional<std::int64_t> checkpoint_step(std::string_view name) {
  if (name.rfind("step_", 0) != 0 || name.size() <= 5 || name.size() > 5 + 18) return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

std::vector<std::pair<std::int64_t, fs::path>> list_checkpoints(const fs::path& root) {
  std::vector<std::pair<std::int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec)) continue;
    if (auto step = checkpoint_step(entry.path().filename().string())) {
      out.emplace_back(*step, entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::pair<std::int64_t, fs::path>> newest_committed_checkpoint(const fs::path& root) {
  const auto all = list_checkpoints(root);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    std::error_code ec;
    if (fs::is_regular_file(it->second / core::run_dir::kManifest, ec)) return *it;
  }
  return std::nullopt;
}

std::vector<fs::path> checkpoint_candidates(const fs::path& root) {
  std::vector<fs::path> candidates;
  if (auto latest = read_file(root / core::run_dir::kLatest, 4096); latest.ok()) {
    std::string name = *latest;
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    if (checkpoint_step(name)) candidates.push_back(root / name);
  }
  const auto all = list_checkpoints(root);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (std::find(candidates.begin(), candidates.end(), it->second) == candidates.end()) {
      candidates.push_back(it->second);
    }
  }
  return candidates;
}

std::string_view VerifiedCheckpoint::bytes(std::string_view name) const {
  if (!files) return {};
  const auto it = files->find(name);
  return it == files->end() ? std::string_view() : it->second.bytes();
}

core::Result<VerifiedCheckpoint> verify_checkpoint(const fs::path& dir, KeepMapped keep) {
  auto text = read_file(dir / core::run_dir::kManifest, std::numeric_limits<std::size_t>::max());
  if (!text.ok()) return make_error(ErrorKind::kNotFound, "no manifest.json");
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorKind::kParse, std::string("manifest.json does not parse: ") + e.what());
  }
  if (!manifest.is_object() || manifest.value("format", "") != "grpo-checkpoint" ||
      !manifest.contains("files") || !manifest["files"].is_object() || !manifest.contains("step") ||
      !manifest["step"].is_number_integer()) {
    return make_error(ErrorKind::kParse, "manifest.json is not a grpo-checkpoint manifest");
  }
  if (manifest.value("version", 0) != kCheckpointFormatVersion) {
    return make_error(ErrorKind::kInvalidValue,
                      "unsupported checkpoint version " + core::json_text(manifest["version"]));
  }
  auto mapped = std::make_shared<CheckpointMappings>();
  for (const auto& [name, entry] : manifest["files"].items()) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
        !entry.is_object()) {
      return make_error(ErrorKind::kParse, "manifest.json lists a bad file entry '" + name + "'");
    }
    auto file = MappedFile::open(dir / name);
    if (!file.ok()) return make_error(ErrorKind::kNotFound, "missing file " + name);
    const std::string_view bytes = file->bytes();
    const auto listed = entry.find("bytes");
    if (listed == entry.end() || !listed->is_number_unsigned() ||
        bytes.size() != listed->get<std::uint64_t>()) {
      return make_error(
          ErrorKind::kInvalidValue,
          name + ": size " + std::to_string(bytes.size()) + " != manifest " +
              (listed == entry.end() ? std::string("(none)") : core::json_text(*listed)));
    }
    if (sha256_hex(bytes) != entry.value("sha256", "")) {
      return make_error(ErrorKind::kInvalidValue, name + ": SHA-256 does not match the manifest");
    }
    if (keep == KeepMapped::kYes) mapped->emplace(name, std::move(file).value());
  }
  VerifiedCheckpoint v{dir, manifest["step"].get<std::int64_t>(), std::move(manifest), nullptr};
  if (keep == KeepMapped::kYes) v.files = std::move(mapped);
  return v;
}

}  // namespace grpo::io
