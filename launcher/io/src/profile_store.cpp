#include "grpo/io/profile_store.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "grpo/core/text.h"
#include "grpo/io/files.h"

namespace grpo::io {
namespace fs = std::filesystem;
using core::CatalogKind;

namespace {

std::optional<std::string> getenv_opt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

const char* subdir(CatalogKind kind) {
  return kind == CatalogKind::kCluster ? "clusters" : "models";
}

bool looks_like_path(std::string_view name) {
  return name.find('/') != std::string_view::npos ||
         (name.size() > 5 && name.substr(name.size() - 5) == ".toml");
}

}  // namespace

std::optional<fs::path> hf_config_path(std::string_view name) {
  if (name.find('/') == std::string_view::npos) return std::nullopt;
  std::error_code ec;
  const fs::path p{std::string(name)};
  if (fs::is_directory(p, ec)) {
    if (fs::is_regular_file(p / "config.json", ec)) return p / "config.json";
    return std::nullopt;
  }
  if (p.filename() == "config.json" && fs::is_regular_file(p, ec)) return p;
  return std::nullopt;
}

core::Result<core::SourceFile> read_hf_config(const fs::path& config_json) {
  GRPO_TRY(std::string text, read_file(config_json, 1u << 20));
  return core::SourceFile{config_json.string(), std::move(text), true};
}

fs::path executable_path() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path{} : exe;
}

fs::path executable_dir() {
  return executable_path().parent_path();
}

fs::path shipped_data_dir(const fs::path& executable_dir) {
  if (executable_dir.empty()) return {};
  return executable_dir.parent_path() / "share" / "grpo-launch";
}

SearchPathInputs search_inputs_from_environment(std::vector<std::string> profile_dirs) {
  SearchPathInputs in;
  in.profile_dirs = std::move(profile_dirs);
  in.env_path = getenv_opt("GRPO_LAUNCH_PROFILE_PATH");
  in.xdg_config_home = getenv_opt("XDG_CONFIG_HOME");
  in.home = getenv_opt("HOME");
  in.executable_dir = executable_dir();
  return in;
}

std::vector<fs::path> profile_search_path(const SearchPathInputs& in) {
  std::vector<fs::path> out;
  for (const auto& d : in.profile_dirs) out.emplace_back(d);
  if (in.env_path) {
    for (const std::string_view part : core::split(*in.env_path, ':')) {
      if (!part.empty()) out.emplace_back(std::string(part));
    }
  }
  if (in.xdg_config_home) {
    out.push_back(fs::path(*in.xdg_config_home) / "grpo-launch" / "profiles");
  } else if (in.home) {
    out.push_back(fs::path(*in.home) / ".config" / "grpo-launch" / "profiles");
  }
  if (!in.executable_dir.empty()) out.push_back(shipped_data_dir(in.executable_dir) / "profiles");
  return out;
}

std::vector<fs::path> template_search_path(const fs::path& executable_dir) {
  std::vector<fs::path> out;
  if (!executable_dir.empty()) out.push_back(shipped_data_dir(executable_dir) / "templates");
  return out;
}

core::Result<core::ConfigSchema> load_config_schema_from(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "verl_keys.txt", ec)) {
    return core::make_error(
        core::ErrorKind::kNotFound,
        "the verl/Megatron key lists are missing: no " + (dir / "verl_keys.txt").string());
  }
  core::SchemaTexts t;
  GRPO_TRY(t.verl_keys, read_file(dir / "verl_keys.txt"));
  GRPO_TRY(t.megatron_fields, read_file(dir / "megatron_transformer_config.txt"));
  GRPO_TRY(t.nccl_env, read_file(dir / "nccl_env.txt"));
  GRPO_TRY(t.hccl_env, read_file(dir / "hccl_env.txt"));
  auto schema = core::ConfigSchema::parse(t);
  if (!schema.ok()) {
    core::Error e = schema.error();
    e.message = dir.string() + ": " + e.message;
    return e;
  }
  return schema;
}

core::Result<core::ConfigSchema> load_config_schema(const fs::path& executable_dir) {
  if (executable_dir.empty()) {
    return core::make_error(core::ErrorKind::kNotFound,
                            "the verl/Megatron key lists are missing: the executable's own "
                            "directory is unknown (/proc/self/exe)");
  }
  return load_config_schema_from(shipped_data_dir(executable_dir) / "schema");
}

DirectorySourceProvider::DirectorySourceProvider(std::vector<fs::path> search_path)
    : search_path_(std::move(search_path)) {}

std::optional<fs::path> DirectorySourceProvider::locate(CatalogKind kind,
                                                        std::string_view name) const {
  std::error_code ec;
  if (looks_like_path(name)) {
    if (auto hf = hf_config_path(name)) return hf;
    fs::path p{std::string(name)};
    if (fs::is_regular_file(p, ec)) return p;
    return std::nullopt;
  }
  // A model is models/<name>.toml or a Hugging Face config, models/<name>/config.json (the
  // families a TOML spec cannot describe); the first directory of the path that has either wins.
  for (const auto& dir : search_path_) {
    const fs::path p = dir / subdir(kind) / (std::string(name) + ".toml");
    if (fs::is_regular_file(p, ec)) return p;
    if (kind != CatalogKind::kModel) continue;
    const fs::path config = dir / subdir(kind) / std::string(name) / "config.json";
    if (fs::is_regular_file(config, ec)) return config;
  }
  return std::nullopt;
}

core::Result<core::SourceFile> DirectorySourceProvider::find(CatalogKind kind,
                                                             std::string_view name) const {
  if (name.empty()) {
    return core::make_error(core::ErrorKind::kNotFound,
                            "empty " + std::string(core::to_string(kind)) + " name");
  }
  if (!looks_like_path(name) && !core::is_catalog_name(name)) {
    return core::make_error(core::ErrorKind::kInvalidValue,
                            std::string(core::to_string(kind)) + " name '" +
                                core::escape_controls(name) +
                                "' may hold only letters, digits, '.', '_' and '-'");
  }
  const auto path = locate(kind, name);
  if (!path) {
    if (looks_like_path(name)) {
      return core::make_error(
          core::ErrorKind::kNotFound,
          "no such " + std::string(core::to_string(kind)) + " file: " + std::string(name));
    }
    std::string searched;
    for (const auto& d : search_path_)
      searched += (searched.empty() ? "" : ", ") + (d / subdir(kind)).string();
    return core::make_error(core::ErrorKind::kNotFound,
                            "unknown " + std::string(core::to_string(kind)) + " '" +
                                std::string(name) + "'" + core::did_you_mean(name, names(kind)) +
                                "; searched " + searched);
  }
  if (kind == CatalogKind::kModel && hf_config_path(path->string())) return read_hf_config(*path);
  GRPO_TRY(std::string text, read_file(*path, 1u << 20));
  return core::SourceFile{path->string(), std::move(text)};
}

std::vector<std::string> DirectorySourceProvider::names(CatalogKind kind) const {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& dir : search_path_) {
    const fs::path d = dir / subdir(kind);
    if (!fs::is_directory(d, ec)) continue;
    for (const auto& entry : fs::directory_iterator(d, ec)) {
      const std::string stem = entry.path().stem().string();
      if (entry.path().extension() == ".toml" && core::is_catalog_name(stem)) out.insert(stem);
      const std::string dir_name = entry.path().filename().string();
      if (kind == CatalogKind::kModel && core::is_catalog_name(dir_name) &&
          fs::is_regular_file(entry.path() / "config.json", ec)) {
        out.insert(dir_name);
      }
    }
  }
  return {out.begin(), out.end()};
}

}  // namespace grpo::io
