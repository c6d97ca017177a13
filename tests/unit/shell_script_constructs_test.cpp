// The shell reader on the bash that verl launch scripts use: word splitting of unquoted
// expansions, arrays, if / case, functions, source, set, command substitution idioms. Expected
// words and locations are written by hand (the texts were checked once against bash 5.2 by
// running the snippets with a stub `run() { printf '<%s>' "$@"; }`); the BashAgrees test also
// runs bash as an oracle on the decidable snippets when bash is installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "grpo/io/profile_store.h"
#include "grpo/shell/shell_script.h"
#include "grpo/verl/checker.h"
#include "test_support.h"

namespace grpo::core {
namespace {

ParsedScript read(const std::string& text, const ShellReadOptions& options = {},
                  const std::string& name = "s.sh") {
  auto r = read_shell_script(text, name, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return r.ok() ? r.value() : ParsedScript{};
}

// The commands whose first word is `name`.
std::vector<const ShellCommand*> commands(const ParsedScript& s, const std::string& name) {
  std::vector<const ShellCommand*> out;
  for (const auto& c : s.commands)
    if (!c.words.empty() && c.words[0].text == name) out.push_back(&c);
  return out;
}

// The argument texts of each `run` command ("$@" of the script left out).
std::vector<std::vector<std::string>> run_args(const ParsedScript& s) {
  std::vector<std::vector<std::string>> out;
  for (const ShellCommand* c : commands(s, "run")) {
    std::vector<std::string> args;
    for (std::size_t i = 1; i < c->words.size(); ++i)
      if (!c->words[i].from_args) args.push_back(c->words[i].text);
    out.push_back(args);
  }
  return out;
}

struct At {
  std::string text;
  std::uint32_t line, column;
};
void expect_words(const ShellCommand& c, std::size_t from, const std::vector<At>& want) {
  ASSERT_GE(c.words.size(), from + want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const ShellWord& w = c.words[from + i];
    EXPECT_EQ(w.text, want[i].text);
    EXPECT_EQ(w.line, want[i].line) << w.text;
    EXPECT_EQ(w.column, want[i].column) << w.text;
  }
}

TEST(ShellConstructs, OverridesInAVariableAreSplitAtTheirOwnLocations) {
  // Inside double quotes a backslash-newline is a continuation and disappears.
  const auto s = read(
      "lr=1e-6\n"
      "ACTOR_CONFIG=\"\n"
      "  actor_rollout_ref.actor.optim.lr=$lr \\\n"
      "  actor_rollout_ref.actor.ppo_mini_batch_size=64\"\n"
      "python3 -m verl.trainer.main_ppo $ACTOR_CONFIG trainer.nnodes=1\n");
  const auto& c = s.commands.back();
  ASSERT_EQ(c.words.size(), 6u);
  expect_words(c, 3,
               {{"actor_rollout_ref.actor.optim.lr=1e-6", 3, 3},
                {"actor_rollout_ref.actor.ppo_mini_batch_size=64", 4, 3},
                {"trainer.nnodes=1", 5, 48}});
  EXPECT_TRUE(c.words[3].from_expansion);
  EXPECT_FALSE(c.words[5].from_expansion);
  EXPECT_EQ(c.words[3].file, "s.sh");
  // Quoted, the same variable is one word, located where it is written.
  const auto q = read("A=\"x=1 y=2\"\nrun \"$A\" $A\n");
  expect_words(q.commands.back(), 1, {{"x=1 y=2", 2, 5}, {"x=1", 1, 4}, {"y=2", 1, 8}});
}

TEST(ShellConstructs, ArraysAndAtExpansion) {
  const auto s = read(
      "args=(data.train_batch_size=256\n"
      "  'trainer.project_name=my run'\n"
      ")\n"
      "args+=(trainer.nnodes=2)\n"
      "run \"${args[@]}\" x${args[1]}y ${#args[@]} \"${args[*]}\" ${args[-1]}\n"
      "declare -a empty=()\n"
      "run a \"${empty[@]}\" \"\" b\n");
  const auto runs = commands(s, "run");
  ASSERT_EQ(runs.size(), 2u);
  // Elements are located at their text inside the array (after an opening quote).
  expect_words(*runs[0], 1,
               {{"data.train_batch_size=256", 1, 7},
                {"trainer.project_name=my run", 2, 4},
                {"trainer.nnodes=2", 4, 8},
                {"xtrainer.project_name=my", 5, 18},
                {"runy", 2, 28},
                {"3", 5, 31}});
  EXPECT_EQ(runs[0]->words[7].text,
            "data.train_batch_size=256 trainer.project_name=my run trainer.nnodes=2");
  EXPECT_EQ(runs[0]->words[8].text, "trainer.nnodes=2");
  EXPECT_EQ(run_args(s)[1], (std::vector<std::string>{"a", "", "b"}));
}

TEST(ShellConstructs, EmptyAndSplitExpansions) {
  const auto s = read(
      "E=\"\"\nX=\"a  b\tc\nd\"\n"
      "run a $E \"$E\" b ${E:-} $X \"$X\" ${U:-\"p q\"} ${U:-p q} ${U:-'p  q'}x\n");
  EXPECT_EQ(run_args(s)[0], (std::vector<std::string>{"a", "", "b", "a", "b", "c", "d",
                                                      "a  b\tc\nd", "p q", "p", "q", "p  qx"}));
}

TEST(ShellConstructs, ParameterOperators) {
  const auto s = read(
      "MODEL=/models/Qwen/Qwen2.5-7B-Instruct\n"
      "run ${MODEL##*/} ${MODEL%/*} ${MODEL#*/} ${MODEL%%/*}x ${MODEL/Qwen/q} ${MODEL//Qwen/q} "
      "${MODEL^^} ${MODEL:8:4} ${MODEL: -8} ${#MODEL}\n"
      "TP=${TP:-${GEN_TP:-2}}\nN=${N:=$((TP * 4))}\nrun $TP $N ${N:+set} ${NOPE:+set}x\n");
  const auto runs = run_args(s);
  EXPECT_EQ(runs[0], (std::vector<std::string>{
                         "Qwen2.5-7B-Instruct", "/models/Qwen", "models/Qwen/Qwen2.5-7B-Instruct",
                         "x", "/models/q/Qwen2.5-7B-Instruct", "/models/q/q2.5-7B-Instruct",
                         "/MODELS/QWEN/QWEN2.5-7B-INSTRUCT", "Qwen", "Instruct", "32"}));
  EXPECT_EQ(runs[1], (std::vector<std::string>{"2", "8", "set", "x"}));
}

TEST(ShellConstructs, DecidableIfAndCaseTakeOneBranch) {
  const auto s = read(
      "ENGINE=${ENGINE:-megatron}\n"
      "if [ \"$ENGINE\" = \"megatron\" ]; then\n  STRAT=megatron\nelif [ \"$ENGINE\" = fsdp ]; "
      "then\n"
      "  STRAT=fsdp\nelse\n  STRAT=other\nfi\n"
      "case $ENGINE in\n  fsdp|fsdp2) TP=1 ;;\n  mega*) TP=4 ;;\n  *) TP=8 ;;\nesac\n"
      "[[ $ENGINE == meg* && -n $TP ]] && OK=yes || OK=no\n"
      "if [ \"$TP\" -gt 2 ] && ! [ -z \"$STRAT\" ]; then BIG=1; else BIG=0; fi\n"
      "run s=$STRAT tp=$TP ok=$OK big=$BIG\n");
  const auto& run = *commands(s, "run").at(0);
  EXPECT_EQ(run_args(s)[0], (std::vector<std::string>{"s=megatron", "tp=4", "ok=yes", "big=1"}));
  for (const auto& w : run.words) EXPECT_FALSE(w.unresolved) << w.text;
  EXPECT_TRUE(run.conditions.empty());
}

TEST(ShellConstructs, UndecidableBranchesAreAllReadAndSaySo) {
  const auto s = read(
      "if [ -f /data/ckpt ]; then\n"
      "  TP=2\n"
      "  python3 -m verl.trainer.main_ppo a=1\n"
      "else\n  TP=4\nfi\n"
      "SAME=1\nif [ -d /x ]; then SAME=1; fi\n"
      "case $(hostname) in\n  gpu*) NODES=2 ;;\nesac\n"
      "[ -n \"$SLURM_JOB_ID\" ] || exit 1\n"
      "run tp=$TP same=$SAME nodes=$NODES\n");
  const auto branch = commands(s, "python3");
  ASSERT_EQ(branch.size(), 1u);
  ASSERT_EQ(branch[0]->conditions.size(), 1u);
  EXPECT_EQ(branch[0]->conditions[0],
            "`if [ -f /data/ckpt ]` at s.sh:1:1 cannot be decided statically; both branches "
            "were read");
  const auto& run = *commands(s, "run").at(0);
  EXPECT_TRUE(run.conditions.empty());  // the exit branch does not go on
  EXPECT_TRUE(run.words[1].unresolved);
  EXPECT_EQ(run.words[1].unresolved_kind, UnresolvedKind::kConditional);
  EXPECT_EQ(run.words[1].unresolved_why,
            "$TP differs between the branches of `if [ -f /data/ckpt ]` at s.sh:1:1");
  EXPECT_EQ(run.words[2].text, "same=1");
  EXPECT_FALSE(run.words[2].unresolved);
  EXPECT_TRUE(run.words[3].unresolved);
}

TEST(ShellConstructs, FunctionsLocalsAndPositionalParameters) {
  const auto s = read(
      "launch() {\n"
      "  local tp=$1\n"
      "  shift\n"
      "  python3 -m verl.trainer.main_ppo actor.tp=$tp \"$@\"\n"
      "}\n"
      "launch 4 trainer.nnodes=2 \"trainer.experiment_name=a b\"\n"
      "run tp=$tp ${1:-first} $# \"$@\"\n"
      "set -- one \"two three\"\nrun $# \"$@\" $1 \"$*\" ${@:2}\n");
  const auto verl = commands(s, "python3");
  ASSERT_EQ(verl.size(), 1u);
  expect_words(
      *verl[0], 3,
      {{"actor.tp=4", 4, 36}, {"trainer.nnodes=2", 6, 10}, {"trainer.experiment_name=a b", 6, 28}});
  const auto runs = commands(s, "run");
  EXPECT_TRUE(runs[0]->words[1].unresolved);   // the local is gone after the call
  EXPECT_EQ(runs[0]->words[2].text, "first");  // the script is read as run without arguments
  EXPECT_EQ(runs[0]->words[3].unresolved_kind, UnresolvedKind::kPositional);
  EXPECT_TRUE(runs[0]->words[4].from_args);
  EXPECT_EQ(run_args(s)[1], (std::vector<std::string>{"2", "one", "two three", "one",
                                                      "one two three", "two", "three"}));
}

TEST(ShellConstructs, SetOptionsAndUnsetVariables) {
  // -o takes the next word, also inside -xeuo: pipefail is not an argument (a bug found by
  // comparing with bash).
  const auto s = read("set -xeuo pipefail\nrun a=$NOPE \"$@\"\nset +u\nrun b=$NOPE\n");
  const auto runs = commands(s, "run");
  ASSERT_EQ(runs[0]->words.size(), 3u);
  EXPECT_TRUE(runs[0]->words[2].from_args);
  EXPECT_EQ(runs[0]->words[1].unresolved_why,
            "unset variable $NOPE (under set -u the script stops here)");
  EXPECT_EQ(runs[1]->words[1].unresolved_why, "unset variable $NOPE");
  EXPECT_EQ(runs[1]->words[1].unresolved_kind, UnresolvedKind::kUnsetVariable);
}

TEST(ShellConstructs, CommandSubstitutions) {
  const auto s = read(
      "DIR=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\n"
      "HERE=$(dirname \"$0\")\nM=/m/Qwen3-8B\n"
      "run $DIR $HERE $(basename $M) `basename \"$M\" B` $(echo a  b) t=$(date +%s) r=$RANDOM\n",
      {}, "examples/grpo/run.sh");
  const auto& w = commands(s, "run").at(0)->words;
  EXPECT_EQ(w[1].text, "examples/grpo");
  EXPECT_EQ(w[2].text, "examples/grpo");
  EXPECT_EQ(w[3].text, "Qwen3-8B");
  EXPECT_EQ(w[4].text, "Qwen3-8");
  EXPECT_EQ(w[5].text, "a");
  EXPECT_EQ(w[6].text, "b");
  EXPECT_EQ(w[7].text, "t=$(date +%s)");
  EXPECT_EQ(w[7].unresolved_kind, UnresolvedKind::kCommandSubstitution);
  EXPECT_EQ(w[8].unresolved_kind, UnresolvedKind::kRunTime);
}

ShellReadOptions files(std::map<std::string, std::string> contents,
                       std::vector<std::string>* asked = nullptr) {
  ShellReadOptions o;
  o.read_file = [contents, asked](const std::string& path) -> Result<std::string> {
    if (asked != nullptr) asked->push_back(path);
    const auto it = contents.find(path);
    if (it == contents.end()) return make_error(ErrorKind::kNotFound, "no such file: " + path);
    return it->second;
  };
  return o;
}

TEST(ShellConstructs, SourceReadsFilesNextToTheScript) {
  std::vector<std::string> asked;
  const auto o = files({{"ex/common.sh",
                         "export NCCL_DEBUG=WARN\n"
                         "MODEL=Qwen/Qwen3-8B\n"
                         "COMMON=\"trainer.nnodes=1\n"
                         "  trainer.n_gpus_per_node=8\"\n"
                         ". ./lib/more.sh\n"},
                        {"ex/lib/more.sh", "MORE=data.train_batch_size=64\nreturn\nMORE=no\n"}},
                       &asked);
  const auto s = read(
      "source \"$(dirname \"$0\")/common.sh\"\n"
      "source ./missing.sh\nsource /etc/profile\n. ../outside.sh\n"
      "python3 -m verl.trainer.main_ppo model=$MODEL $COMMON $MORE\n",
      o, "ex/run.sh");
  EXPECT_EQ(s.sourced, (std::vector<std::string>{"ex/common.sh", "ex/lib/more.sh"}));
  EXPECT_EQ(asked, (std::vector<std::string>{"ex/common.sh", "ex/lib/more.sh", "ex/missing.sh"}));
  ASSERT_EQ(s.notes.size(), 3u);
  EXPECT_EQ(s.notes[0],
            "`source ./missing.sh` at ex/run.sh:2:1 is not followed: no such file: "
            "ex/missing.sh");
  EXPECT_EQ(s.notes[1],
            "`source /etc/profile` at ex/run.sh:3:1 is not followed: only files in "
            "the script's directory are read");
  const auto& c = *commands(s, "python3").at(0);
  EXPECT_EQ(c.file, "ex/run.sh");
  expect_words(c, 3,
               {{"model=Qwen/Qwen3-8B", 5, 34},
                {"trainer.nnodes=1", 3, 9},
                {"trainer.n_gpus_per_node=8", 4, 3},
                {"data.train_batch_size=64", 1, 6}});
  EXPECT_EQ(c.words[4].file, "ex/common.sh");
  EXPECT_EQ(c.words[6].file, "ex/lib/more.sh");
  ASSERT_TRUE(c.exported);
  ASSERT_EQ(c.exported->count("NCCL_DEBUG"), 1u);
  EXPECT_EQ(c.exported->at("NCCL_DEBUG").value.file, "ex/common.sh");
  EXPECT_EQ(c.exported->at("NCCL_DEBUG").value.line, 1u);
}

TEST(ShellConstructs, SourceDepthAndCyclesAreBounded) {
  // a.sh sources itself; b.sh sources c.sh sources d.sh ... deeper than the limit.
  std::map<std::string, std::string> contents = {{"a.sh", "source a.sh\nX=1\n"}};
  for (int i = 0; i < 12; ++i)
    contents["n" + std::to_string(i) + ".sh"] = "source n" + std::to_string(i + 1) + ".sh\n";
  auto o = files(contents);
  o.max_source_depth = 4;
  const auto s = read("source a.sh\nsource n0.sh\nrun $X\n", o, "main.sh");
  EXPECT_EQ(run_args(s)[0], (std::vector<std::string>{"1"}));
  ASSERT_EQ(s.notes.size(), 2u);
  EXPECT_NE(s.notes[0].find("sources itself"), std::string::npos) << s.notes[0];
  EXPECT_NE(s.notes[1].find("nested deeper than 4"), std::string::npos) << s.notes[1];
}

TEST(ShellConstructs, LoopsAreReadOnce) {
  const auto s = read(
      "for seed in 1 2 3; do\n  python3 -m verl.trainer.main_ppo seed=$seed\ndone\n"
      "while read -r line; do N=$line; break; done < list.txt\nrun $N\nbreak\nrun after\n");
  const auto& c = *commands(s, "python3").at(0);
  ASSERT_EQ(c.conditions.size(), 1u);
  EXPECT_EQ(c.conditions[0], "`for seed` at s.sh:1:1: the loop body was read once");
  EXPECT_EQ(c.words[3].unresolved_kind, UnresolvedKind::kConditional);
  EXPECT_TRUE(commands(s, "run").at(0)->words[1].unresolved);
  EXPECT_EQ(commands(s, "run").size(), 2u);  // break outside a loop does not stop the reading
}

TEST(ShellConstructs, HostileInputGivesOneLineErrorsOrBoundedWork) {
  std::string doubling = "a=x\n";
  for (int i = 0; i < 40; ++i) doubling += "a=$a$a\n";
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "if true; then ";
  for (const auto& [text, line] :
       std::vector<std::pair<std::string, std::uint32_t>>{{doubling, 0},
                                                          {deep, 1},
                                                          {"if true; then\n  echo\n", 1},
                                                          {"case x in\n a) ;;\n", 1},
                                                          {"for i in 1; do\n", 1},
                                                          {"a=(b c\n", 1},
                                                          {"{ echo; \n", 1},
                                                          {"fi\n", 1},
                                                          {"[[ a == b \n", 1}}) {
    auto r = read_shell_script(text, "bad.sh");
    ASSERT_FALSE(r.ok()) << text.substr(0, 40);
    EXPECT_EQ(r.error().kind, ErrorKind::kParse);
    if (line != 0) {
      EXPECT_EQ(r.error().where.line, line) << r.error().str();
    }
    EXPECT_EQ(r.error().str().find('\n'), std::string::npos);
  }
  // Nested ifs inside nested calls: bounded, with the place where it stops.
  std::string calls;
  for (int f = 0; f < 16; ++f) {
    calls += "f" + std::to_string(f) + "() {\n";
    for (int i = 0; i < 20; ++i) calls += "if true; then\n";
    calls += "f" + std::to_string(f + 1) + "\n";
    for (int i = 0; i < 20; ++i) calls += "fi\n";
    calls += "}\n";
  }
  auto nested = read_shell_script(calls + "f0\n", "calls.sh");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().str().find("nested deeper than 200"), std::string::npos);
  // A long && / || list of undecidable tests branches a few times, then is read in order.
  std::string chain = "X=0; ";
  for (int i = 0; i < 5000; ++i)
    chain += "[ -f /f" + std::to_string(i) + " ] && X=" + std::to_string(i) + " || ";
  const auto long_list = read(chain + "true\nrun $X\n");
  EXPECT_TRUE(commands(long_list, "run").at(0)->words[1].unresolved);
  // Recursion and fan-out stop at the call depth, with a note.
  const auto s = read("f() { f; f; }\nf\nrun ok\n");
  EXPECT_EQ(run_args(s)[0], (std::vector<std::string>{"ok"}));
  ASSERT_EQ(s.notes.size(), 2u);  // the two calls inside f, each noted once
  EXPECT_EQ(s.notes[0],
            "s.sh:1:7: the call of f is not followed: function calls nested deeper than 16");
}

// Decidable snippets: the reader's words must be bash's words.
TEST(ShellConstructs, BashAgrees) {
  if (std::system("bash -c true >/dev/null 2>&1") != 0) GTEST_SKIP() << "no bash";
  const std::vector<std::string> snippets = {
      "lr=1e-6\nC=\"\n  a.lr=$lr \\\n  b.mini=64\"\nrun $C c=1 \"$C\"\n",
      "args=(x=1 'y=2 3')\nargs+=(z=4)\nrun \"${args[@]}\" ${args[@]} \"${args[*]}\" "
      "${#args[@]} ${args[1]}\n",
      "E=\nrun $E \"$E\" ${E:-d} ${E-d} ${U-\"u v\"} ${U:-u v}x\n",
      "M=/m/Qwen/Qwen2.5-7B\nrun ${M##*/} ${M%/*} ${M/Qwen/q} ${M//Qwen/q} ${M,,} ${M:3:4}\n",
      "ENGINE=fsdp\ncase $ENGINE in\n  mega*) S=m ;;\n  fsdp|fsdp2) S=f ;&\n  x) S=$S-x ;;\n"
      "esac\nif [[ $S == f* ]] && [ \"$ENGINE\" != megatron ]; then T=1; else T=2; fi\nrun $S "
      "$T\n",
      "f() { local a=$1; shift; run \"$a\" \"$@\" $#; }\nf 1 \"2 3\" 4\nset -- p q\nrun $@ "
      "\"$*\"\n",
      "N=$((2 * (3 + 4) % 5))\n[ $N -eq 4 ] && R=yes || R=no\nrun $N $R ${N:+set}\n",
      "X='a  b'\nY=\"$X c\"\nZ=${X}${Y}\nrun $Z \"$Z\" ~ ~/x\n",
  };
  for (const auto& snippet : snippets) {
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("grpo_bash_oracle_" + std::to_string(::getpid()));
    {
      std::ofstream out(file);
      out << "HOME=/root\nrun() { printf '%s\\037' \"$@\"; printf '\\036'; }\n" << snippet;
    }
    std::string got;
    FILE* p = ::popen(("bash " + file.string()).c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) got.append(buf, n);
    ::pclose(p);
    std::filesystem::remove(file);
    std::vector<std::vector<std::string>> bash;
    std::vector<std::string> cur;
    std::string word;
    for (char c : got) {
      if (c == '\037') {
        cur.push_back(word);
        word.clear();
      } else if (c == '\036') {
        bash.push_back(cur);
        cur.clear();
      } else {
        word += c;
      }
    }
    EXPECT_EQ(run_args(read(snippet)), bash) << snippet;
  }
}

TEST(ShellConstructs, RunTimeNamesAreNotesInTheChecker) {
  const ConfigSchema& schema = test::schema();
  const auto s = read(
      "NAME=qwen_$(date +%Y%m%d)\n"
      "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\\n"
      "  trainer.experiment_name=$NAME trainer.project_name=p_$RANDOM \\\n"
      "  data.train_batch_size=$(nproc) $EXTRA\n");
  auto report = check_script(s, schema, test::shipped(), CheckOptions{});
  ASSERT_TRUE(report.ok()) << report.error().str();
  std::map<std::string, Severity> got;
  for (const auto& d : report->runs.at(0).diagnostics) {
    if (d.code == DiagCode::kUnresolved) got[d.setting] = d.severity;
  }
  EXPECT_EQ(got, (std::map<std::string, Severity>{{"trainer.experiment_name", Severity::kInfo},
                                                  {"trainer.project_name", Severity::kInfo},
                                                  {"data.train_batch_size", Severity::kWarning},
                                                  {"$EXTRA", Severity::kInfo}}));
}

}  // namespace
}  // namespace grpo::core
