// shell_quote / shell_join / split_command_line: vectors, and a round trip through a real bash
// for every byte value and the hostile strings of the sbatch tests.
#include "grpo/shell/shell_quote.h"

#include <gtest/gtest.h>

#include "grpo/process/process_runner.h"

namespace grpo::core {
namespace {

TEST(ShellQuote, Vectors) {
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", "''"},
      {"plain", "plain"},
      {"/usr/bin/grpo-launch", "/usr/bin/grpo-launch"},
      {"--nodes=2", "--nodes=2"},
      {"mlx5_0,mlx5_1", "mlx5_0,mlx5_1"},
      {"a@b:c%d+e", "a@b:c%d+e"},
      {"NAME=value", "'NAME=value'"},  // would be an assignment as a first word
      {"_x=1", "'_x=1'"},
      {"1x=1", "1x=1"},  // not an identifier: no assignment
      {"a b", "'a b'"},
      {"it's", "'it'\\''s'"},
      {"'", "''\\'''"},
      {"$(touch x)", "'$(touch x)'"},
      {"`id`", "'`id`'"},
      {"a;b", "'a;b'"},
      {"line1\nline2", "'line1\nline2'"},
      {"tab\there", "'tab\there'"},
      {"~", "'~'"},
      {"*", "'*'"},
      {"{a,b}", "'{a,b}'"},
      {"\\", "'\\'"},
      {"\"", "'\"'"},
      {"!", "'!'"},
      {"#", "'#'"},
      {"é", "'é'"},
  };
  for (const auto& [in, want] : vectors) EXPECT_EQ(shell_quote(in), want) << in;
}

TEST(ShellQuote, JoinAndNames) {
  EXPECT_EQ(shell_join({"srun", "--label", "a b", ""}), "srun --label 'a b' ''");
  EXPECT_EQ(shell_join({}), "");
  EXPECT_TRUE(is_env_name("NCCL_DEBUG"));
  EXPECT_TRUE(is_env_name("_"));
  EXPECT_TRUE(is_env_name("a1"));
  EXPECT_FALSE(is_env_name(""));
  EXPECT_FALSE(is_env_name("1A"));
  EXPECT_FALSE(is_env_name("A-B"));
  EXPECT_FALSE(is_env_name("A B"));
  EXPECT_FALSE(is_env_name("A=B"));
  EXPECT_TRUE(has_nul(std::string("a\0b", 3)));
  EXPECT_FALSE(has_nul("ab"));
  EXPECT_EQ(sanitize_name("qwen3-30b-moe"), "qwen3-30b-moe");
  EXPECT_EQ(sanitize_name("a b/$(x)"), "a_b___x_");
  EXPECT_EQ(sanitize_name(""), "_");
}

// bash reads every quoted word back as exactly the original bytes, and runs nothing.
TEST(ShellQuote, RoundTripThroughBash) {
  std::vector<std::string> values = {
      "",
      " ",
      "a b",
      "it's",
      "''",
      "\"",
      "$(touch CANARY)",
      "`touch CANARY`",
      "; touch CANARY",
      "a\nb\n",
      "\\\\",
      "$HOME",
      "${HOME}",
      "!!",
      "*",
      "?",
      "[a]",
      "~root",
      "#x",
      "x=1",
      "-n",
      "--",
      "é ü",
      "\t",
      "\r\n",
      "&& touch CANARY",
      "| touch CANARY",
      "> CANARY",
  };
  std::string all_bytes;
  for (int c = 1; c < 256; ++c) all_bytes.push_back(static_cast<char>(c));
  values.push_back(all_bytes);
  for (int c = 1; c < 256; ++c) values.push_back(std::string(1, static_cast<char>(c)));

  std::string script = "cd \"$1\" || exit 9\n";
  for (const auto& v : values) script += "printf '%s\\0' " + shell_quote(v) + "\n";
  script += "[ ! -e CANARY ] || echo CANARY-EXISTS >&2\n";
  const std::string dir = testing::TempDir();
  process::PosixProcessRunner runner;
  process::CommandSpec cmd;
  cmd.argv = {"bash", "-c", script, "bash", dir};
  cmd.timeout = std::chrono::seconds(30);
  auto done = runner.run(cmd);
  ASSERT_TRUE(done.ok()) << done.error().str();
  EXPECT_EQ(process::shell_code(done->status), 0) << done->err;
  EXPECT_EQ(done->err, "");
  std::vector<std::string> got;
  std::string cur;
  for (char c : done->out) {
    if (c == '\0') {
      got.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  ASSERT_EQ(got.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got[i], values[i]) << i;
}

TEST(SplitCommandLine, Vectors) {
  using V = std::vector<std::string>;
  const std::vector<std::pair<std::string, V>> ok = {
      {"probe", {"probe"}},
      {"  /bin/probe   --timeout-s 30 ", {"/bin/probe", "--timeout-s", "30"}},
      {"a 'b c' \"d e\"", {"a", "b c", "d e"}},
      {"a 'it'\\''s'", {"a", "it's"}},
      {"a \"x\\\"y\\\\z\\$w\\`v\"", {"a", "x\"y\\z$w`v"}},
      {"a b\\ c", {"a", "b c"}},
      {"a ''", {"a", ""}},
      {"a '$(x);`y`|&<>'", {"a", "$(x);`y`|&<>"}},
      {"a --set=k=v", {"a", "--set=k=v"}},
      {"a x#y x~y", {"a", "x#y", "x~y"}},
      {"a \"l1\nl2\"", {"a", "l1\nl2"}},
  };
  for (const auto& [in, want] : ok) {
    auto got = split_command_line(in);
    ASSERT_TRUE(got.ok()) << in << ": " << got.error().str();
    EXPECT_EQ(got.value(), want) << in;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty"},
      {"   ", "empty"},
      {"a; b", "unquoted ';' at column 2"},
      {"a && b", "unquoted '&' at column 3"},
      {"a | b", "'|'"},
      {"a > f", "'>'"},
      {"a < f", "'<'"},
      {"$(id)", "'$' at column 1"},
      {"a $HOME", "'$'"},
      {"a `id`", "'`'"},
      {"a \"$HOME\"", "inside double quotes"},
      {"a \"`id`\"", "inside double quotes"},
      {"a 'unterminated", "unterminated single quote at column 3"},
      {"a \"unterminated", "unterminated double quote"},
      {"a\nb", "a newline"},
      {"a *", "'*'"},
      {"a ~/x", "'~' starting a word"},
      {"a #c", "'#' starting a word"},
      {"a (b)", "'('"},
      {"a {b,c}", "'{'"},
      {"a \\", "trailing backslash"},
      {"FOO=1 probe", "assignment"},
      {std::string("a\0b", 3), "NUL"},
      {std::string("a '\0'", 6), "NUL byte at column 4"},
      {std::string("a \"\0\"", 6), "NUL byte at column 4"},
      {std::string("a \\\0", 4), "NUL byte at column 4"},
  };
  for (const auto& [in, want] : bad) {
    auto got = split_command_line(in);
    ASSERT_FALSE(got.ok()) << in;
    EXPECT_EQ(got.error().kind, ErrorKind::kInvalidValue);
    EXPECT_NE(got.error().message.find(want), std::string::npos) << got.error().message;
    EXPECT_EQ(got.error().message.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace grpo::core
