#include "grpo/trainer/model_source.h"

#include <algorithm>
#include <cstdlib>

#include "grpo/core/text.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"

namespace grpo::trainer {
namespace fs = std::filesystem;

fs::path default_model_dir() {
  if (const char* env = std::getenv("GRPO_PROFILE_DIR"); env != nullptr && *env != '\0') {
    return fs::path(env) / "models";
  }
  return io::shipped_data_dir(io::executable_dir()) / "profiles" / "models";
}

DirectoryModelProvider::DirectoryModelProvider(fs::path dir) : dir_(std::move(dir)) {}

core::Result<core::SourceFile> DirectoryModelProvider::find(core::CatalogKind kind,
                                                            std::string_view name) const {
  if (kind != core::CatalogKind::kModel) {
    return core::make_error(core::ErrorKind::kNotFound, "grpo-trainer has no cluster profiles");
  }
  const std::string n(name);
  if (auto hf = io::hf_config_path(n)) return io::read_hf_config(*hf);
  const bool is_path = n.find('/') != std::string::npos ||
                       (n.size() > 5 && n.compare(n.size() - 5, 5, ".toml") == 0);
  const fs::path path = is_path ? fs::path(n) : dir_ / (n + ".toml");
  auto text = io::read_file(path);
  if (!text.ok()) {
    std::string msg = "model '" + n + "' not found (looked for " + path.string() + ")";
    if (!is_path) msg += core::did_you_mean(n, names(kind));
    return core::make_error(core::ErrorKind::kNotFound, msg);
  }
  return core::SourceFile{path.string(), std::move(text).value()};
}

std::vector<std::string> DirectoryModelProvider::names(core::CatalogKind kind) const {
  std::vector<std::string> out;
  std::error_code ec;
  if (kind != core::CatalogKind::kModel || !fs::is_directory(dir_, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() == ".toml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace grpo::trainer
