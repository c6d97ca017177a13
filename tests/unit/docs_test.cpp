// Codes and exit codes are documented once, in docs/; these tests keep code and docs in step.
#include <gtest/gtest.h>

#include <regex>

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

TEST(Docs, ExitCodesAreDocumented) {
  const std::string doc = test::read_text(test::source_dir() / "docs/exit-codes.md");
  for (int code : {0, 1, 2, 64, 69, 70, 73, 75, 76, 80, 81, 82, 83, 130}) {
    EXPECT_NE(doc.find("| " + std::to_string(code) + " |"), std::string::npos) << code;
  }
}

}  // namespace
}  // namespace grpo::core
