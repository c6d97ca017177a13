// Helpers shared by the unit tests: the shipped profiles, golden files.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "grpo/core/catalog.h"
#include "grpo/io/profile_store.h"

namespace grpo::test {

inline std::filesystem::path source_dir() {
  return GRPO_SOURCE_DIR;
}

// The profiles and models shipped in profiles/ (nothing else on the search path).
inline const io::DirectorySourceProvider& shipped() {
  static const io::DirectorySourceProvider provider({source_dir() / "profiles"});
  return provider;
}

// The checker's key lists as shipped in data/schema.
inline const core::ConfigSchema& schema() {
  static const core::ConfigSchema s =
      io::load_config_schema_from(source_dir() / "data" / "schema").value();
  return s;
}

inline core::ModelSpec model(const std::string& name) {
  auto m = core::load_model(shipped(), name);
  if (!m.ok()) ADD_FAILURE() << m.error().str();
  return m.ok() ? m.value() : core::ModelSpec{};
}

inline core::ClusterProfile cluster(const std::string& name,
                                    std::vector<core::Override> sets = {}) {
  auto c = core::load_cluster(shipped(), name, sets);
  if (!c.ok()) ADD_FAILURE() << c.error().str();
  return c.ok() ? c.value() : core::ClusterProfile{};
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compares `actual` with tests/golden/<name>. With GRPO_UPDATE_GOLDEN=1 in the environment the
// golden file is rewritten instead (the only way goldens change).
inline void expect_golden(const std::string& name, const std::string& actual) {
  const auto path = source_dir() / "tests" / "golden" / name;
  const char* update = std::getenv("GRPO_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing; run with GRPO_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(read_text(path), actual)
      << "golden mismatch: " << path << " (GRPO_UPDATE_GOLDEN=1 regenerates it)";
}

}  // namespace grpo::test
