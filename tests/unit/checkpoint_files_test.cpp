// Checkpoint directories read-only (io/checkpoint_files.h), which the trainer's resume and
// grpo-launch export share: step names, the order candidates are tried in, and verification
// against manifest.json. The SHA-256 in the manifests here is FIPS 180-2's published digest of
// "abc" (appendix B.1), not one computed by the code under test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "grpo/io/checkpoint_files.h"

namespace grpo::io {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAbcSha256 =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("grpo-ckpt-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// A checkpoint directory holding file "a" = "abc" and a manifest describing it.
fs::path checkpoint(const fs::path& root, std::int64_t step, const std::string& files_json) {
  const fs::path d = root / checkpoint_dir_name(step);
  fs::create_directories(d);
  write(d / "a", "abc");
  write(d / "manifest.json", R"({"format": "grpo-checkpoint", "version": 1, "step": )" +
                                 std::to_string(step) + R"(, "files": )" + files_json + "}");
  return d;
}

TEST(CheckpointFiles, StepNames) {
  EXPECT_EQ(checkpoint_dir_name(10), "step_00000010");
  EXPECT_EQ(checkpoint_dir_name(123456789), "step_123456789");
  EXPECT_EQ(checkpoint_step("step_00000010"), 10);
  EXPECT_EQ(checkpoint_step("step_0"), 0);
  EXPECT_FALSE(checkpoint_step("step_"));
  EXPECT_FALSE(checkpoint_step("step_12a"));
  EXPECT_FALSE(checkpoint_step(".tmp-step_00000010-42"));
  EXPECT_FALSE(checkpoint_step("step_1234567890123456789"));  // 19 digits: could overflow
}

TEST(CheckpointFiles, LatestFirstThenNewestDown) {
  const fs::path root = temp_dir("candidates");
  for (int s : {1, 3, 2}) fs::create_directories(root / checkpoint_dir_name(s));
  fs::create_directories(root / ".tmp-step_00000004-7");
  write(root / "latest", "step_00000002\n");
  const auto c = checkpoint_candidates(root);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].filename(), "step_00000002");
  EXPECT_EQ(c[1].filename(), "step_00000003");
  EXPECT_EQ(c[2].filename(), "step_00000001");
  EXPECT_TRUE(checkpoint_candidates(root / "absent").empty());
  fs::remove_all(root);
}

TEST(CheckpointFiles, VerifiesSizesAndHashes) {
  const fs::path root = temp_dir("verify");
  const std::string good = std::string(R"({"a": {"bytes": 3, "sha256": ")") + kAbcSha256 + "\"}}";
  auto ok = verify_checkpoint(checkpoint(root, 1, good));
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ(ok->step, 1);

  auto size = verify_checkpoint(checkpoint(root, 2, R"({"a": {"bytes": 4, "sha256": "00"}})"));
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.error().kind, core::ErrorKind::kInvalidValue);
  EXPECT_EQ(size.error().message, "a: size 3 != manifest 4");

  std::string wrong = good;
  wrong[wrong.size() - 4] = wrong[wrong.size() - 4] == '0' ? '1' : '0';
  auto hash = verify_checkpoint(checkpoint(root, 3, wrong));
  ASSERT_FALSE(hash.ok());
  EXPECT_EQ(hash.error().message, "a: SHA-256 does not match the manifest");

  auto missing = verify_checkpoint(checkpoint(root, 4, R"({"b": {"bytes": 3, "sha256": "00"}})"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, core::ErrorKind::kNotFound);
  EXPECT_EQ(missing.error().message, "missing file b");

  auto escape = verify_checkpoint(checkpoint(root, 5, R"({"../a": {"bytes": 3}})"));
  ASSERT_FALSE(escape.ok());
  EXPECT_EQ(escape.error().kind, core::ErrorKind::kParse);

  fs::create_directories(root / "empty");
  auto none = verify_checkpoint(root / "empty");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "no manifest.json");
  fs::remove_all(root);
}

}  // namespace
}  // namespace grpo::io
