// launcher/io's file helpers: creating a run directory never replaces another one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "grpo/io/files.h"

namespace grpo::io {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("grpo-files-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A plain rename(2) replaces an empty directory: another launcher's run directory that has just
// been claimed would be overwritten.
TEST(RenameNoReplace, NeverReplacesAnExistingDirectory) {
  const fs::path d = temp_dir("noreplace");
  fs::create_directories(d / "src");
  std::ofstream(d / "src" / "run.json") << "{}";
  fs::create_directories(d / "taken");  // empty: rename(2) would replace it
  auto st = rename_no_replace(d / "src", d / "taken");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, core::ErrorKind::kIo);
  EXPECT_EQ(st.error().message, "already exists: " + (d / "taken").string());
  EXPECT_TRUE(fs::is_empty(d / "taken"));
  EXPECT_TRUE(fs::exists(d / "src" / "run.json"));
  ASSERT_TRUE(rename_no_replace(d / "src", d / "free").ok());
  EXPECT_TRUE(fs::exists(d / "free" / "run.json"));
  EXPECT_FALSE(fs::exists(d / "src"));
  fs::remove_all(d);
}

// Launchers racing for one run directory: exactly one creates it, every other one gets the one
// line "run directory already exists: <path>", and the winner's files are what is there.
TEST(CreateDirAtomic, RacingCreatorsNeverOverwriteOneAnother) {
  const fs::path d = temp_dir("race");
  constexpr int kThreads = 8;
  for (int round = 0; round < 5; ++round) {
    const fs::path run = d / ("run-" + std::to_string(round));
    std::atomic<bool> go{false};
    std::vector<core::Status> results(kThreads, core::ok_status());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        results[static_cast<std::size_t>(t)] =
            create_dir_atomic(run, {{"run.json", "writer " + std::to_string(t) + "\n"},
                                    {"plan.json", std::string(64 * 1024, 'x')}});
      });
    }
    go = true;
    for (auto& th : threads) th.join();
    int winner = -1;
    for (int t = 0; t < kThreads; ++t) {
      const auto& r = results[static_cast<std::size_t>(t)];
      if (r.ok()) {
        EXPECT_EQ(winner, -1) << "two creators succeeded";
        winner = t;
      } else {
        EXPECT_EQ(r.error().message, "run directory already exists: " + run.string());
      }
    }
    ASSERT_GE(winner, 0);
    EXPECT_EQ(slurp(run / "run.json"), "writer " + std::to_string(winner) + "\n");
    // No temporary directory is left behind by the losers.
    int entries = 0;
    for (const auto& e : fs::directory_iterator(d))
      entries += e.path().filename().string()[0] == '.';
    EXPECT_EQ(entries, 0);
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace grpo::io
