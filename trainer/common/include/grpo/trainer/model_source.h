// Finding model specs by name for grpo-trainer: a core::SourceProvider over one directory of
// <name>.toml files (the launcher's search-path provider in launcher/io will replace it).
// LibTorch-free.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "grpo/core/catalog.h"

namespace grpo::trainer {

class DirectoryModelProvider final : public core::SourceProvider {
 public:
  explicit DirectoryModelProvider(std::filesystem::path dir);
  // Models: <dir>/<name>.toml, or `name` itself when it looks like a path ('/' or ".toml").
  // Clusters: always kNotFound.
  core::Result<core::SourceFile> find(core::CatalogKind kind, std::string_view name) const override;
  std::vector<std::string> names(core::CatalogKind kind) const override;

 private:
  std::filesystem::path dir_;
};

// The directory model names are resolved in when --profile-dir is not given: $GRPO_PROFILE_DIR,
// else the shipped <prefix>/share/grpo-launch/profiles/models next to the executable's bin/.
std::filesystem::path default_model_dir();

}  // namespace grpo::trainer
