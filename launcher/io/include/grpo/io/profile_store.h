// Finds cluster profiles and model specs on disk. The search path, first match wins:
//   1. --profile-dir DIR flags, in the order given
//   2. $GRPO_LAUNCH_PROFILE_PATH, colon-separated directories
//   3. the per-user directory $XDG_CONFIG_HOME/grpo-launch/profiles (~/.config/... by default)
//   4. the shipped profiles, <prefix>/share/grpo-launch/profiles, where <prefix> is the parent of
//      the executable's directory (installed: /usr/bin/grpo-launch -> /usr/share/grpo-launch; the
//      build tree mirrors this layout: build/bin/ and build/share/grpo-launch/,
//      docs/architecture.md)
// Each directory holds clusters/<name>.toml and models/<name>.toml. See docs/profile-format.md.
// Nothing here knows the source tree: an installed binary finds only what was installed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/catalog.h"
#include "grpo/core/config_schema.h"

namespace grpo::io {

struct SearchPathInputs {
  std::vector<std::string> profile_dirs;       // --profile-dir
  std::optional<std::string> env_path;         // $GRPO_LAUNCH_PROFILE_PATH
  std::optional<std::string> xdg_config_home;  // $XDG_CONFIG_HOME
  std::optional<std::string> home;             // $HOME
  std::filesystem::path executable_dir;        // where the running binary lives (may be empty)
};

// The running executable (/proc/self/exe), empty when unknown; executable_dir() is its directory.
std::filesystem::path executable_path();
std::filesystem::path executable_dir();

// <prefix>/share/grpo-launch for an executable in <prefix>/bin (empty for an empty input).
std::filesystem::path shipped_data_dir(const std::filesystem::path& executable_dir);

// Reads the environment variables above and the executable's directory.
SearchPathInputs search_inputs_from_environment(std::vector<std::string> profile_dirs);

// The ordered list of directories (existing or not) for these inputs.
std::vector<std::filesystem::path> profile_search_path(const SearchPathInputs& inputs);

// A model given as a Hugging Face model directory (docs/hf-checkpoints.md): `name` is a path (it
// contains a '/') to a directory holding config.json, or to a file named config.json. Returns
// config.json's path; nullopt when `name` is neither. Both providers (this one and grpo-trainer's)
// use it, so --model DIR means the same to grpo-launch and grpo-trainer.
std::optional<std::filesystem::path> hf_config_path(std::string_view name);
// Reads that config.json (at most 1 MiB) into a SourceFile with hf_config set.
core::Result<core::SourceFile> read_hf_config(const std::filesystem::path& config_json);

class DirectorySourceProvider final : public core::SourceProvider {
 public:
  explicit DirectorySourceProvider(std::vector<std::filesystem::path> search_path);
  core::Result<core::SourceFile> find(core::CatalogKind kind, std::string_view name) const override;
  std::vector<std::string> names(core::CatalogKind kind) const override;
  const std::vector<std::filesystem::path>& search_path() const { return search_path_; }
  // Where `name` would be loaded from (nullopt when not found).
  std::optional<std::filesystem::path> locate(core::CatalogKind kind, std::string_view name) const;

 private:
  std::vector<std::filesystem::path> search_path_;
};

// The directories holding templates/ files: <prefix>/share/grpo-launch/templates.
std::vector<std::filesystem::path> template_search_path(
    const std::filesystem::path& executable_dir);

// Loads the checker's schema (verl_keys.txt, megatron_transformer_config.txt, nccl_env.txt,
// hccl_env.txt) from `schema_dir`. Errors: kNotFound when the directory lacks them, kIo, kParse.
core::Result<core::ConfigSchema> load_config_schema_from(const std::filesystem::path& schema_dir);
// The same from <prefix>/share/grpo-launch/schema.
core::Result<core::ConfigSchema> load_config_schema(const std::filesystem::path& executable_dir);

}  // namespace grpo::io
