// Codes and exit codes are documented once, in docs/; these tests keep code and docs in step.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "grpo/core/diagnostic.h"
#include "test_support.h"

namespace grpo::core {
namespace {

TEST(Docs, EveryDiagnosticCodeIsInTheTable) {
  const std::string doc = test::read_text(test::source_dir() / "docs/diagnostics.md");
  for (const auto& info : all_diag_codes()) {
    EXPECT_NE(doc.find("| `" + std::string(info.name) + "` |"), std::string::npos)
        << info.name << " is missing from docs/diagnostics.md";
  }
  // ...and the table lists nothing the code does not have.
  std::regex row(R"(\| `([A-Z_]+)` \|)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1];
    bool known = false;
    for (const auto& info : all_diag_codes()) known |= info.name == name;
    EXPECT_TRUE(known) << name << " is documented but not a DiagCode";
  }
}

// Every enumerator `kExit... = N` of the two headers that define exit codes, read from their text
// so that a code added there without a row here fails.
std::set<int> exit_codes_in_headers() {
  std::set<int> codes;
  const std::regex enumerator(R"(\bkExit\w+ = (\d+),)");
  for (const char* header :
       {"launcher/cli/exit_codes.h", "launcher/runlog/include/grpo/runlog/restart_policy.h"}) {
    const std::string text = test::read_text(test::source_dir() / header);
    std::size_t found = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), enumerator);
         it != std::sregex_iterator(); ++it, ++found) {
      codes.insert(std::stoi((*it)[1]));
    }
    EXPECT_GT(found, 0u) << header << " defines no kExit... = N enumerators any more";
  }
  return codes;
}

TEST(Docs, ExitCodesAreDocumented) {
  const std::string doc = test::read_text(test::source_dir() / "docs/exit-codes.md");
  std::set<int> documented;
  const std::regex row(R"(\n\| (\d+) \| )");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    documented.insert(std::stoi((*it)[1]));
  }
  EXPECT_EQ(documented, exit_codes_in_headers());
}

// README's plan excerpt is the golden Parallel Config Summary with lines left out ("..."): every
// other line must be a line of tests/golden/plan-a100x8-qwen3-30b-moe.txt, in the same order.
TEST(Docs, ReadmePlanExcerptIsTheGoldenSummary) {
  const std::string readme = test::read_text(test::source_dir() / "README.md");
  const std::string golden =
      test::read_text(test::source_dir() / "tests/golden/plan-a100x8-qwen3-30b-moe.txt");
  const std::string command = "$ grpo-launch plan --profile a100x8 --model qwen3-30b-moe\n";
  const auto start = readme.find(command);
  ASSERT_NE(start, std::string::npos) << "README lost its plan excerpt";
  const auto end = readme.find("```", start);
  ASSERT_NE(end, std::string::npos);
  std::istringstream excerpt(readme.substr(start + command.size(), end - start - command.size()));
  std::size_t at = 0;
  int checked = 0;
  for (std::string line; std::getline(excerpt, line);) {
    if (line == "...") continue;
    const auto found = golden.find(line + "\n", at);
    ASSERT_NE(found, std::string::npos)
        << "README line not in the golden summary (in order): " << line;
    EXPECT_TRUE(found == 0 || golden[found - 1] == '\n') << line;
    at = found + line.size();
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

// docs/verl-emit.md's example is the golden emitted script with lines left out ("..."): every
// other line is a line of tests/golden/verl-a100x8-qwen3-30b-moe.sh, in the same order.
TEST(Docs, VerlEmitExampleIsTheGoldenScript) {
  const std::string doc = test::read_text(test::source_dir() / "docs/verl-emit.md");
  const std::string golden =
      test::read_text(test::source_dir() / "tests/golden/verl-a100x8-qwen3-30b-moe.sh");
  const std::string command =
      "$ grpo-launch plan --profile a100x8 --model qwen3-30b-moe --emit verl\n";
  const auto start = doc.find(command);
  ASSERT_NE(start, std::string::npos) << "docs/verl-emit.md lost its example";
  const auto end = doc.find("```", start);
  ASSERT_NE(end, std::string::npos);
  std::istringstream excerpt(doc.substr(start + command.size(), end - start - command.size()));
  std::size_t at = 0;
  int checked = 0;
  for (std::string line; std::getline(excerpt, line);) {
    if (line == "..." || line.empty()) continue;
    const auto found = golden.find(line + "\n", at);
    ASSERT_NE(found, std::string::npos) << "example line not in the golden (in order): " << line;
    EXPECT_TRUE(found == 0 || golden[found - 1] == '\n') << line;
    at = found + line.size();
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

}  // namespace
}  // namespace grpo::core
