#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include "grpo/io/files.h"
#include "grpo/trainer/checkpoint_store.h"

namespace grpo::trainer {
namespace {
namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("grpo-ckpt-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path save(CheckpointStore& s, std::int64_t step, const std::string& payload, int keep = 3) {
    auto w = s.begin(step);
    EXPECT_TRUE(w.ok());
    EXPECT_TRUE(w->write_file("model.bin", payload).ok());
    EXPECT_TRUE(w->write_file("state.json", "{}").ok());
    auto dir = s.commit(std::move(w).value(), {{"note", "test"}}, keep);
    EXPECT_TRUE(dir.ok());
    return *dir;
  }
  fs::path root_;
};

TEST_F(StoreTest, CommitWritesManifestLatestAndPrunes) {
  CheckpointStore s(root_);
  for (int step = 1; step <= 5; ++step) save(s, step * 10, "payload" + std::to_string(step));
  auto all = s.list();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all.front().first, 30);
  EXPECT_EQ(*io::read_file(root_ / "latest"), "step_00000050\n");
  auto best = s.find_latest_valid(nullptr);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->step, 50);
  EXPECT_EQ(best->manifest["metadata"]["note"], "test");
  EXPECT_EQ(best->manifest["files"]["model.bin"]["bytes"], 8);
}

// A checkpoint as the hand-written SHA-256 wrote it (before libcrypto did the hashing): its
// manifest's lowercase hex still verifies. The hash was checked against coreutils' sha256sum.
TEST_F(StoreTest, ACheckpointWrittenBeforeLibcryptoStillVerifies) {
  const fs::path dir = root_ / "step_00000010";
  fs::create_directories(dir);
  ASSERT_TRUE(
      io::write_file_synced(dir / "model.bin", "weights written by the hand-written SHA-256").ok());
  ASSERT_TRUE(io::write_file_synced(dir / "manifest.json", R"({
  "files": {"model.bin": {"bytes": 43,
    "sha256": "65184670c1156b90c0e65f6584481bc1e03d5cb82482c7505f4f9d591b91bfb9"}},
  "format": "grpo-checkpoint", "metadata": {}, "step": 10, "version": 1
}
)")
                  .ok());
  CheckpointStore s(root_);
  auto info = s.verify(dir);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->step, 10);
}

TEST_F(StoreTest, CorruptAndTornCheckpointsAreSkippedWithAReason) {
  CheckpointStore s(root_);
  save(s, 10, "good");
  const fs::path bad = save(s, 20, "will be corrupted");
  ASSERT_TRUE(io::write_file_synced(bad / "model.bin", "will be c0rrupted").ok());
  // A torn writer: a temporary directory that never got renamed.
  auto w = s.begin(30);
  ASSERT_TRUE(w->write_file("model.bin", "half").ok());
  // A directory without a manifest (crash between mkdir and manifest).
  fs::create_directories(root_ / "step_00000040");
  std::vector<SkippedCheckpoint> skipped;
  auto best = s.find_latest_valid(&skipped);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->step, 10);
  ASSERT_EQ(skipped.size(), 2u);
  std::map<std::string, std::string> reasons;
  for (const auto& sk : skipped) reasons[fs::path(sk.path).filename().string()] = sk.reason;
  EXPECT_NE(reasons["step_00000040"].find("manifest"), std::string::npos);
  EXPECT_NE(reasons["step_00000020"].find("SHA-256"), std::string::npos);
  s.remove_temporaries();
  EXPECT_FALSE(fs::exists(w->dir()));
}

TEST_F(StoreTest, TruncatedFileAndMissingFileFailVerification) {
  CheckpointStore s(root_);
  const fs::path d = save(s, 5, "0123456789");
  ASSERT_TRUE(io::write_file_synced(d / "model.bin", "01234").ok());
  auto v = s.verify(d);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("size"), std::string::npos);
  fs::remove(d / "model.bin");
  EXPECT_FALSE(s.verify(d).ok());
  EXPECT_FALSE(s.find_latest_valid(nullptr));
}

TEST_F(StoreTest, LatestPointingAtAnOlderStepStillFindsTheNewest) {
  CheckpointStore s(root_);
  save(s, 10, "a");
  save(s, 20, "b");
  ASSERT_TRUE(io::write_file_synced(root_ / "latest", "step_00000010\n").ok());
  auto best = s.find_latest_valid(nullptr);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->step, 20);
}

// pick_checkpoint, what every rank runs on its own before the rendezvous: the newest checkpoint
// that verifies, with the verified files still mapped (what was hashed is what is read).
TEST_F(StoreTest, PickFindsTheNewestGoodCheckpointAndKeepsItsFilesMapped) {
  CheckpointStore s(root_);
  save(s, 10, "good weights");
  const fs::path bad = save(s, 20, "will be corrupted");
  ASSERT_TRUE(io::write_file_synced(bad / "model.bin", "will be c0rrupted").ok());
  auto w = s.begin(30);  // a dead writer's temporary
  ASSERT_TRUE(w.ok());
  const CheckpointPick kept = pick_checkpoint(s, "auto", {}, /*clean=*/false);
  EXPECT_TRUE(fs::exists(w->dir()));
  const CheckpointPick pick = pick_checkpoint(s, "auto", {}, /*clean=*/true);
  EXPECT_FALSE(fs::exists(w->dir()));
  ASSERT_TRUE(pick.found);
  EXPECT_FALSE(pick.error);
  EXPECT_EQ(pick.found->step, 10);
  EXPECT_EQ(pick.found->bytes("model.bin"), "good weights");
  EXPECT_EQ(pick.found->bytes("state.json"), "{}");
  EXPECT_EQ(pick.found->bytes("not-listed.bin"), "");
  ASSERT_EQ(pick.skipped.size(), 1u);
  EXPECT_NE(pick.skipped[0].reason.find("SHA-256"), std::string::npos);
  EXPECT_GE(pick.seconds, 0.0);
  ASSERT_TRUE(kept.found);
  EXPECT_EQ(kept.found->step, 10);
}

TEST_F(StoreTest, PickOfAResumePathThatDoesNotVerifyIsAnIoError) {
  CheckpointStore s(root_);
  const fs::path good = save(s, 10, "good");
  const fs::path bad = save(s, 20, "will be corrupted");
  ASSERT_TRUE(io::write_file_synced(bad / "model.bin", "will be c0rrupted").ok());
  const CheckpointPick p = pick_checkpoint(s, "resume_path", bad, false);
  EXPECT_FALSE(p.found);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error->kind, core::ErrorKind::kIo);
  EXPECT_EQ(p.error->message,
            "checkpoint " + bad.string() +
                " does not verify: model.bin: SHA-256 does not match the manifest");
  const CheckpointPick ok = pick_checkpoint(s, "resume_path", good, false);
  ASSERT_TRUE(ok.found);
  EXPECT_EQ(ok.found->bytes("model.bin"), "good");
  const CheckpointPick none = pick_checkpoint(s, "disable", {}, false);
  EXPECT_FALSE(none.found);
  EXPECT_FALSE(none.error);
}

// The mapping outlives a replacement of the file on disk (a writer's rename): a reader keeps
// the bytes it verified.
TEST_F(StoreTest, AVerifiedMappingKeepsTheBytesItHashed) {
  CheckpointStore s(root_);
  const fs::path d = save(s, 10, "first version");
  auto info = s.verify(d);
  ASSERT_TRUE(info.ok()) << info.error().message;
  const fs::path tmp = d / "model.bin.new";
  ASSERT_TRUE(io::write_file_synced(tmp, "second version!").ok());
  fs::rename(tmp, d / "model.bin");
  EXPECT_EQ(info->bytes("model.bin"), "first version");
}

// Checkpoints are the owner's alone (docs/supervisor.md): files 0600, folders 0700.
TEST_F(StoreTest, CheckpointsAreTheOwnersAlone) {
  CheckpointStore s(root_);
  const fs::path dir = save(s, 10, "weights");
  const auto mode = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 0777;
  };
  EXPECT_EQ(mode(root_), 0700u);
  EXPECT_EQ(mode(dir), 0700u);
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(mode(e.path()), 0600u) << e.path();
  EXPECT_EQ(mode(root_ / "latest"), 0600u);
}

// Saving a step again (a restarted attempt redoes it) swaps the new checkpoint in: at every
// moment one of the two is in place. Before, the old one was deleted first and a crash (or a
// failed rename) in between lost the step; a watcher saw the directory missing.
TEST_F(StoreTest, ReplacingAStepNeverLeavesItMissing) {
  CheckpointStore s(root_);
  const fs::path dir = save(s, 10, std::string(1 << 20, 'a'));
  std::atomic<bool> done{false};
  std::atomic<int> missing{0}, looks{0};
  std::thread watcher([&] {
    while (!done.load()) {
      std::error_code ec;
      if (!fs::exists(dir / "manifest.json", ec)) ++missing;
      ++looks;
    }
  });
  for (int i = 0; i < 20; ++i) save(s, 10, std::string(1 << 20, static_cast<char>('b' + i)));
  done = true;
  watcher.join();
  EXPECT_GT(looks.load(), 0);
  EXPECT_EQ(missing.load(), 0);
  auto info = s.verify(dir);
  ASSERT_TRUE(info.ok()) << info.error().str();
  EXPECT_EQ(info->bytes("model.bin"), std::string(1 << 20, static_cast<char>('b' + 19)));
  // Nothing of the swaps is left beside the checkpoints.
  for (const auto& e : fs::directory_iterator(root_)) {
    EXPECT_TRUE(e.path().filename() == "latest" || e.path() == dir) << e.path();
  }
}

}  // namespace
}  // namespace grpo::trainer
