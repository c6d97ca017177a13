// launcher/io's file helpers: creating a run directory never replaces another one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

// A write that fails half way (here: past RLIMIT_FSIZE, EFBIG, as a full disk would be ENOSPC)
// leaves nothing behind: neither the target nor a partial temporary file, which was once left
// with the target's mode (0700: a half script, executable).
TEST(WriteFileAtomic, AFailedWriteLeavesNoPartialFile) {
  const fs::path d = temp_dir("partial");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the limit applies to this child only
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const auto st = write_file_atomic(d / "job.sh", std::string(100000, '#'), 0700);
    ::_exit(st.ok() ? 10 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the write should have failed";
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(d)) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << left.front();
  // A whole write gets the mode; its temporary name is gone.
  ASSERT_TRUE(write_file_atomic(d / "job.sh", "#!/bin/sh\n", 0700).ok());
  struct stat st {};
  ASSERT_EQ(::stat((d / "job.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  fs::remove_all(d);
}

// The rendezvous secret: 64 fresh hex digits; a file others may read is refused.
TEST(Secret, FreshAndOwnerOnly) {
  const fs::path d = temp_dir("secret");
  const std::string a = new_secret(), b = new_secret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  ASSERT_TRUE(write_file_atomic(d / kRendezvousSecretFile, a + "\n", 0600).ok());
  EXPECT_EQ(read_secret_file(d / kRendezvousSecretFile).value(), a);
  fs::permissions(d / kRendezvousSecretFile, fs::perms::group_read, fs::perm_options::add);
  auto open = read_secret_file(d / kRendezvousSecretFile);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("mode 0640"), std::string::npos) << open.error().message;
  EXPECT_EQ(read_secret_file(d / "none").error().kind, core::ErrorKind::kNotFound);
  fs::remove_all(d);
}

}  // namespace
}  // namespace grpo::io
