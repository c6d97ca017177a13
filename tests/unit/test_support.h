// Helpers shared by the unit tests: the shipped profiles, golden files.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "grpo/core/catalog.h"
#include "grpo/core/engine_versions.h"
#include "grpo/io/profile_store.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/planner.h"

namespace grpo::test {

inline std::filesystem::path source_dir() {
  return GRPO_SOURCE_DIR;
}

// The contract tests (run_dir_test, telemetry_events_test, verl_keys_test): every line of the
// product sources (.cpp and .h under launcher/ and trainer/) but the contract's own header, as
// "path:line", for which `finds` names what the line spells; those are returned, and `files` is
// how many files were read.
inline std::vector<std::string> product_lines_spelling(
    const std::string& contract_header,
    const std::function<std::vector<std::string>(const std::string& line)>& finds,
    std::size_t& files) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  files = 0;
  for (const char* root : {"launcher", "trainer"}) {
    for (const auto& e : fs::recursive_directory_iterator(source_dir() / root)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
      if (e.path().filename() == contract_header) continue;
      ++files;
      std::ifstream in(e.path());
      std::string line;
      for (int no = 1; std::getline(in, line); ++no) {
        for (const auto& what : finds(line)) {
          found.push_back(fs::relative(e.path(), source_dir()).string() + ":" + std::to_string(no) +
                          ": " + what);
        }
      }
    }
  }
  return found;
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

// A Megatron layout with sequence parallelism wherever TP > 1 (CP 1).
inline core::Layout layout(int tp, int pp, int dp, int ep = 1, int etp = 1, int micro = 1,
                           int rollout_tp = 1) {
  core::Layout l;
  l.dims = core::ParallelDims{tp, pp, 1, dp, ep, etp};
  l.micro_batch = micro;
  l.rollout_tp = rollout_tp;
  l.sequence_parallel = tp > 1;
  return l;
}

// `grpo-launch plan -p CLUSTER -m MODEL --set ...` in process.
inline core::Plan plan_with(const std::string& model_name, const std::string& cluster_name,
                            const std::vector<std::string>& sets,
                            const core::EngineVersions& engines = {}) {
  std::vector<core::Override> all;
  for (const auto& s : sets) all.push_back(core::parse_override(s).value());
  core::PlanRequest req;
  std::vector<core::Override> profile;
  EXPECT_TRUE(core::split_layout_overrides(all, req.constraints, profile).ok());
  req.cluster = cluster(cluster_name, profile);
  req.model = model(model_name);
  req.engines = engines;
  return core::make_plan(req);
}

}  // namespace grpo::test
