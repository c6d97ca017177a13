// Runs `check` over every script in tests/data/check/ and compares the (line, code) pairs with
// the script's .expected file exactly: planted errors found at their lines, clean scripts silent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <tuple>

#include "grpo/core/engine_versions.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/verl/checker.h"
#include "test_support.h"

namespace grpo::core {
namespace {

namespace fs = std::filesystem;

using test::schema;

// Orders "12 CODE" lines by number, those of the script before "file:12 CODE" lines.
bool by_file_and_line(const std::string& a, const std::string& b) {
  auto key = [](const std::string& l) {
    const auto space = l.find(' ');
    const auto colon = l.rfind(':', space);
    const std::string file = colon == std::string::npos ? "" : l.substr(0, colon);
    const std::string num = l.substr(colon == std::string::npos ? 0 : colon + 1);
    return std::make_tuple(file, std::atoi(num.c_str()), l);
  };
  return key(a) < key(b);
}

struct Outcome {
  std::vector<std::string>
      lines;  // "12 TP_MISMATCH warning", "x.bash:3 TP_MISMATCH error", "EXIT 2"
  std::string detail;
};

// Reads NAME.args: --profile / -p, --model / -m, --engines, --check-parallel, --check-memory,
// --check-data-types (as on the command line; without a --check-* flag all groups run).
Outcome run_check(const fs::path& script) {
  Outcome out;
  CheckOptions options;
  const fs::path args = fs::path(script).replace_extension(".args");
  if (fs::exists(args)) {
    std::istringstream in(test::read_text(args));
    bool parallel = false, memory = false, data_types = false;
    for (std::string a; in >> a;) {
      if (a == "--check-parallel") parallel = true;
      if (a == "--check-memory") memory = true;
      if (a == "--check-data-types") data_types = true;
      if (a.rfind("--check-", 0) == 0) continue;
      std::string v;
      in >> v;
      if (a == "--profile" || a == "-p") options.profile = v;
      if (a == "--model" || a == "-m") options.model = v;
      if (a == "--engines") {
        auto e = parse_engine_versions(v);
        if (!e.ok()) return {{"BAD ARGS"}, e.error().str()};
        options.engines = e.value();
      }
    }
    if (parallel || memory || data_types) {
      options.parallel = parallel;
      options.memory = memory;
      options.data_types = data_types;
    }
  }
  auto text = io::read_file(script);
  if (!text.ok()) return {{"EXIT 2"}, text.error().str()};
  // The full path, so that `source "$(dirname "$0")/x.bash"` finds the sibling file.
  ShellReadOptions read_options;
  read_options.read_file = [](const std::string& path) { return io::read_file(path, 4u << 20); };
  auto parsed = read_shell_script(text.value(), script.string(), read_options);
  if (!parsed.ok()) return {{"EXIT 2"}, parsed.error().str()};
  auto report = check_script(parsed.value(), schema(), test::shipped(), options);
  if (!report.ok()) return {{"EXIT 2"}, report.error().str()};
  for (const auto& run : report->runs) {
    for (const auto& d : run.diagnostics) {
      // A finding in a sourced file is "<file name>:<line> CODE".
      const std::string file = fs::path(d.where.file).filename().string();
      out.lines.push_back((file == script.filename().string() ? "" : file + ":") +
                          std::to_string(d.where.line) + " " + std::string(to_string(d.code)) +
                          " " + std::string(to_string(d.severity)));
      out.detail += "  " + d.str() + "\n";
    }
  }
  std::sort(out.lines.begin(), out.lines.end(), by_file_and_line);
  return out;
}

// NAME.expected: "[file:]<line> <CODE>" or "[file:]<line> <CODE> <severity>" per line.
std::vector<std::string> expected_lines(const fs::path& file) {
  std::vector<std::string> out;
  std::istringstream in(test::read_text(file));
  for (std::string l; std::getline(in, l);) {
    while (!l.empty() && (l.back() == ' ' || l.back() == '\r')) l.pop_back();
    if (!l.empty() && l[0] != '#') out.push_back(l);
  }
  return out;
}

// Drops the severity from `got` where the expectation does not give one.
std::vector<std::string> as_expected(std::vector<std::string> got,
                                     const std::vector<std::string>& want) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i].rfind("EXIT", 0) == 0) continue;
    const bool want_severity =
        i < want.size() && std::count(want[i].begin(), want[i].end(), ' ') >= 2;
    if (!want_severity) got[i] = got[i].substr(0, got[i].rfind(' '));
  }
  return got;
}

TEST(CheckCorpus, EveryScriptGivesExactlyItsExpectedDiagnostics) {
  const fs::path dir = test::source_dir() / "tests/data/check";
  std::vector<fs::path> scripts;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".sh") scripts.push_back(e.path());
  }
  std::sort(scripts.begin(), scripts.end());
  ASSERT_GE(scripts.size(), 15u);
  int clean = 0;
  for (const auto& script : scripts) {
    const fs::path expected = fs::path(script).replace_extension(".expected");
    ASSERT_TRUE(fs::exists(expected)) << expected;
    auto want = expected_lines(expected);
    std::sort(want.begin(), want.end(), by_file_and_line);
    const Outcome got = run_check(script);
    EXPECT_EQ(as_expected(got.lines, want), want) << script.filename() << ":\n" << got.detail;
    clean += want.empty();
  }
  EXPECT_GE(clean, 5) << "the corpus needs clean scripts to show there are no false positives";
}

// The OOM_RISK error names the phase whose floor does not fit, not the phase whose worst case
// overshoots most (the training phase's worst case is only a warning).
TEST(CheckCorpus, AnOomErrorNamesThePhaseWhoseFloorDoesNotFit) {
  const Outcome got = run_check(test::source_dir() / "tests/data/check/oom_vllm_rollout_floor.sh");
  EXPECT_NE(got.detail.find("OOM_RISK: rollout phase needs 81.6 GiB (floor)"), std::string::npos)
      << got.detail;
  EXPECT_NE(got.detail.find("even the floor does not fit"), std::string::npos) << got.detail;
}

}  // namespace
}  // namespace grpo::core
