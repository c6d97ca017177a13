// The run directory's names are spelled once, in grpo/core/run_dir.h (issue 33: "each contract
// defined once"). Every writer and reader in the product sources names a file through its
// constant, so renaming one renames it everywhere; this test keeps it so: a file name of the
// contract spelled as a literal anywhere else under launcher/ or trainer/ fails, with its
// file:line. Tests may spell the names (they read the run directory as users' tools would).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "grpo/core/run_dir.h"
#include "test_support.h"

namespace grpo::core {
namespace {

struct Name {
  std::string_view value;
  bool folder;  // a bare word: only a path join (/ "x", "/x", "x/") counts as spelling it
};

std::vector<Name> contract() {
  using namespace run_dir;
  return {
      {kRunSpec, false},    {kEnv, false},        {kRankMap, false},          {kPlan, false},
      {kSupervisor, false}, {kVerlInfo, false},   {kVerlAttempt, false},      {kBatchScript, false},
      {kJob, false},        {kEvents, false},     {kAllocation, false},       {kSrunLog, false},
      {kStacks, false},     {kManifest, false},   {kCheckpointConfig, false}, {kCheckpoints, true},
      {kLogs, true},        {kTensorboard, true}, {kHfExport, true},          {kLatest, true}};
}

// Where `line` spells `n` as a literal (not in a comment).
bool spells(const std::string& line, const Name& n) {
  const std::string code = line.substr(0, line.find("//"));
  const std::string v(n.value);
  if (!n.folder) return code.find('"' + v + '"') != std::string::npos;
  for (const std::string& p :
       {"/ \"" + v + "\"", "\"/" + v + "\"", "\"/" + v + "/", "\"" + v + "/"}) {
    if (code.find(p) != std::string::npos) return true;
  }
  return false;
}

TEST(RunDirContract, NamesAreSpelledOnlyHere) {
  std::size_t files = 0;
  const auto found = test::product_lines_spelling(
      "run_dir.h",
      [](const std::string& line) {
        std::vector<std::string> out;
        for (const Name& n : contract()) {
          if (spells(line, n)) out.emplace_back(n.value);
        }
        return out;
      },
      files);
  EXPECT_GT(files, 100u);
  for (const auto& f : found) ADD_FAILURE() << f << " (name it through grpo/core/run_dir.h)";
}

// The detector itself, on lines written by hand.
TEST(RunDirContract, TheCheckSeesLiteralsNotConstants) {
  EXPECT_TRUE(spells(R"(  const fs::path log = run / "events.jsonl";)", {"events.jsonl", false}));
  EXPECT_TRUE(spells(R"(  files["job.sbatch"] = s;)", {"job.sbatch", false}));
  EXPECT_FALSE(
      spells(R"(  const fs::path log = run / run_dir::kEvents;)", {"events.jsonl", false}));
  EXPECT_FALSE(spells(R"(  // events.jsonl: "events.jsonl")", {"events.jsonl", false}));
  EXPECT_TRUE(spells(R"(  auto root = dir / "checkpoints";)", {"checkpoints", true}));
  EXPECT_TRUE(spells(R"(  std::string c = d + "/checkpoints";)", {"checkpoints", true}));
  EXPECT_FALSE(spells(R"(  {"checkpoints", 240},)", {"checkpoints", true}));  // a table column
  EXPECT_EQ(run_dir::attempt_log_dir(3), "attempt-3");
}

}  // namespace
}  // namespace grpo::core
