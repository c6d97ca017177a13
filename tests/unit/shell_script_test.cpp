// The static shell reader: continuations, comments, quoting, assignments, expansions.
#include <gtest/gtest.h>

#include "grpo/shell/shell_script.h"

namespace grpo::core {
namespace {

ParsedScript read(const std::string& text) {
  auto r = read_shell_script(text, "s.sh");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return r.ok() ? r.value() : ParsedScript{};
}

const ShellCommand& last_command(const ParsedScript& s) {
  return s.commands.back();
}

TEST(ShellScript, ContinuationsCommentsAndWordPositions) {
  const auto s =
      read("# header\npython3 -m verl.trainer.main_ppo \\\n    a.b=1 \\\n  c.d='x y' # tail\n");
  ASSERT_EQ(s.commands.size(), 1u);
  const auto& w = s.commands[0].words;
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[3].text, "a.b=1");
  EXPECT_EQ(w[3].line, 3u);
  EXPECT_EQ(w[3].column, 5u);
  EXPECT_EQ(w[4].text, "c.d=x y");
  EXPECT_EQ(w[4].line, 4u);
}

TEST(ShellScript, VariablesDefaultsAndExports) {
  const auto s = read(
      "TP=${TP:-4}\nexport NCCL_DEBUG=INFO\nMODEL=$HOME/models/Qwen3-8B\n"
      "run x=$TP y=\"${MODEL}\" z=${UNSET:-a${TP}b} w=$NOPE v=${REQ:?set REQ}\n");
  const auto& w = last_command(s).words;
  EXPECT_EQ(w[1].text, "x=4");
  EXPECT_EQ(w[2].text, "y=/root/models/Qwen3-8B");
  EXPECT_EQ(w[3].text, "z=a4b");
  EXPECT_FALSE(w[3].unresolved);
  EXPECT_TRUE(w[4].unresolved);
  EXPECT_NE(w[4].unresolved_why.find("$NOPE"), std::string::npos);
  EXPECT_TRUE(w[5].unresolved);
  EXPECT_NE(w[5].unresolved_why.find("REQ"), std::string::npos);
  ASSERT_EQ(s.exports.count("NCCL_DEBUG"), 1u);
  EXPECT_EQ(s.exports.at("NCCL_DEBUG").value.text, "INFO");
  EXPECT_EQ(s.exports.at("NCCL_DEBUG").value.line, 2u);
}

TEST(ShellScript, CommandSubstitutionAndArithmeticAreUnresolved) {
  const auto s = read("N=$(nproc)\nM=`hostname`\nrun a=$N b=$M c=$((N+2)) d=\"$(date +%s)\"\n");
  const auto& w = last_command(s).words;
  for (std::size_t i = 1; i <= 4; ++i) EXPECT_TRUE(w[i].unresolved) << w[i].text;
  EXPECT_NE(w[1].unresolved_why.find("$(nproc)"), std::string::npos);
}

TEST(ShellScript, IntegerArithmeticIsEvaluated) {
  const auto s = read(
      "P=1024\nR=$((1024 * 20))\nrun a=$((P + R)) b=$(( (P - 24) / 10 % 7 )) c=$((-P*2)) d=$((P / "
      "0)) "
      "e=$((X + 1)) f=$((${P}+1))\n");
  const auto& w = last_command(s).words;
  EXPECT_EQ(w[1].text, "a=21504");
  EXPECT_EQ(w[2].text, "b=2");
  EXPECT_EQ(w[3].text, "c=-2048");
  EXPECT_TRUE(w[4].unresolved);  // division by zero
  EXPECT_TRUE(w[5].unresolved);  // unset variable
  EXPECT_EQ(w[6].text, "f=1025");
}

TEST(ShellScript, ArgumentsAndPrefixAssignments) {
  const auto s = read("CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=WARN python3 -m m a=1 \"$@\"\n");
  const auto& c = last_command(s);
  ASSERT_EQ(c.prefix.size(), 2u);
  EXPECT_EQ(c.prefix[0].name, "CUDA_VISIBLE_DEVICES");
  EXPECT_TRUE(c.prefix[0].exported);
  EXPECT_EQ(c.words.front().text, "python3");
  EXPECT_TRUE(c.words.back().from_args);
}

TEST(ShellScript, SeparatorsRedirectionsAndHeredocs) {
  const auto s =
      read("a=1; b=2 && echo $a$b > /dev/null 2>&1\ncat <<EOF\nignored $(x)\nEOF\nrun c=$b\n");
  EXPECT_EQ(last_command(s).words[1].text, "c=2");
  const auto& echo = s.commands[2];
  ASSERT_EQ(echo.words.size(), 2u);
  EXPECT_EQ(echo.words[1].text, "12");
}

TEST(ShellScript, ListsAndQuotesInOverrides) {
  const auto s = read("f=a.parquet\nrun data.train_files=\"['$f', 'b']\" k=\"x\\\"y\" 'l=$f'\n");
  const auto& w = last_command(s).words;
  EXPECT_EQ(w[1].text, "data.train_files=['a.parquet', 'b']");
  EXPECT_EQ(w[2].text, "k=x\"y");
  EXPECT_EQ(w[3].text, "l=$f");
}

TEST(ShellScript, UnterminatedConstructsAreParseErrorsWithLocation) {
  for (const auto& [text, line] :
       std::vector<std::pair<std::string, std::uint32_t>>{{"run a='x\n\n", 1},
                                                          {"run\nb=\"x\n", 2},
                                                          {"c=$(ls\n", 1},
                                                          {"d=${X:-y\n", 1},
                                                          {"cat <<E\nx\n", 1}}) {
    auto r = read_shell_script(text, "bad.sh");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().kind, ErrorKind::kParse);
    EXPECT_EQ(r.error().where.file, "bad.sh");
    EXPECT_EQ(r.error().where.line, line) << text << ": " << r.error().str();
    EXPECT_EQ(r.error().str().find('\n'), std::string::npos);
  }
  EXPECT_FALSE(read_shell_script(std::string("a\0b", 3), "nul.sh").ok());
}

}  // namespace
}  // namespace grpo::core
