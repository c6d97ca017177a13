// The sbatch script: the view (core::make_sbatch_view), its validation, the kainjow rendering,
// golden files for three profiles, and the hostile-value tests (docs/sbatch-template.md).
#include "grpo/job/sbatch_script.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>

#include "grpo/process/process_runner.h"
#include "grpo/render/sbatch_render.h"
#include "grpo/shell/shell_quote.h"
#include "test_support.h"

namespace grpo::core {
namespace {

namespace fs = std::filesystem;

// tests/data/profiles first (slurm-test, hostile*), then the shipped profiles.
const io::DirectorySourceProvider& test_profiles() {
  static const io::DirectorySourceProvider provider(
      {test::source_dir() / "tests" / "data" / "profiles", test::source_dir() / "profiles"});
  return provider;
}

ClusterProfile load_cluster_or_fail(const std::string& name) {
  auto c = load_cluster(test_profiles(), name, {});
  if (!c.ok()) ADD_FAILURE() << c.error().str();
  return c.ok() ? c.value() : ClusterProfile{};
}

// A runnable plan with a fixed layout: the goldens test the script, not the planner's choice.
Plan fixed_plan(const ClusterProfile& c, const std::string& model, const ParallelDims& dims) {
  Plan p;
  p.cluster = c;
  p.model = test::model(model);
  p.feasible = true;
  p.best.layout.dims = dims;
  p.rank_map = build_rank_map(c.nodes, c.gpus_per_node, dims);
  p.env = build_env(c, p.best.layout);
  return p;
}

Plan slurm_test_plan() {
  return fixed_plan(load_cluster_or_fail("slurm-test"), "tiny-dense",
                    ParallelDims{1, 1, 1, 4, 1, 1});
}

SbatchRunOptions golden_options() {
  SbatchRunOptions o;
  o.run_dir = "/shared/runs/golden-run";
  o.launcher_path = "/opt/grpo-launch/bin/grpo-launch";
  o.run_id = "golden-run";
  o.version = "VERSION";
  return o;
}

std::string shipped_template() {
  return test::read_text(test::source_dir() / "templates" / "sbatch.mustache");
}

std::string render_or_fail(const Plan& plan, const SbatchRunOptions& options) {
  auto view = make_sbatch_view(plan, options);
  if (!view.ok()) {
    ADD_FAILURE() << view.error().str();
    return {};
  }
  auto text = render::render_sbatch(shipped_template(), view.value());
  if (!text.ok()) {
    ADD_FAILURE() << text.error().str();
    return {};
  }
  return text.value();
}

process::Completion run_bash(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = {}) {
  process::PosixProcessRunner runner;
  process::CommandSpec cmd;
  cmd.argv = {"bash"};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.env = env;
  cmd.timeout = std::chrono::seconds(30);
  auto done = runner.run(cmd);
  if (!done.ok()) {
    ADD_FAILURE() << done.error().str();
    return {};
  }
  return done.value();
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  return out;
}

TEST(GoldenSbatch, ThreeProfiles) {
  struct Case {
    const char* golden;
    const char* cluster;
    const char* model;
    ParallelDims dims;
  };
  const std::vector<Case> cases = {
      {"sbatch-a100x8.sh", "a100x8", "qwen3-30b-moe", ParallelDims{2, 1, 1, 4, 8, 1}},
      {"sbatch-npu-910b-x8.sh", "npu-910b-x8", "qwen2.5-7b", ParallelDims{4, 1, 1, 2, 1, 1}},
      {"sbatch-slurm-test.sh", "slurm-test", "tiny-dense", ParallelDims{1, 1, 1, 4, 1, 1}},
  };
  for (const auto& c : cases) {
    const Plan plan = fixed_plan(load_cluster_or_fail(c.cluster), c.model, c.dims);
    const std::string script = render_or_fail(plan, golden_options());
    ASSERT_FALSE(script.empty()) << c.cluster;
    test::expect_golden(c.golden, script);
    auto syntax = run_bash({"-n", "-c", script});
    EXPECT_EQ(process::shell_code(syntax.status), 0) << c.cluster << ": " << syntax.err;
  }
}

TEST(SbatchView, SpareNodesAreAskedForOnTopOfTheRankMap) {
  auto options = golden_options();
  options.spare_nodes = 2;
  auto view = make_sbatch_view(slurm_test_plan(), options);  // the rank map: 2 nodes x 2 ranks
  ASSERT_TRUE(view.ok()) << view.error().str();
  EXPECT_EQ(view->nodes, "4");
  EXPECT_EQ(view->ntasks_per_node, "2");
  options.spare_nodes = -1;
  EXPECT_FALSE(make_sbatch_view(slurm_test_plan(), options).ok());
}

TEST(SbatchView, FieldsFromPlanAndProfile) {
  auto view = make_sbatch_view(slurm_test_plan(), golden_options());
  ASSERT_TRUE(view.ok()) << view.error().str();
  const SbatchView& v = view.value();
  EXPECT_EQ(v.job_name, "grpo-tiny-dense-slurm-test");
  EXPECT_EQ(v.nodes, "2");
  EXPECT_EQ(v.ntasks_per_node, "2");
  EXPECT_EQ(v.cpus_per_task, "2");  // 4 cores / 2 ranks
  EXPECT_EQ(v.gpus_per_node, "");   // vendor cpu: no GPUs
  EXPECT_EQ(v.gres, "");
  EXPECT_EQ(v.partition, "debug");
  EXPECT_EQ(v.time, "00:05:00");
  EXPECT_EQ(v.signal, "B:USR2@60");
  EXPECT_EQ(v.output, "/shared/runs/golden-run/slurm-%j.out");
  EXPECT_EQ(v.error, "/shared/runs/golden-run/slurm-%j.err");
  // The plan's env sorted by name (the profile's variable, OMP_NUM_THREADS and the layout's ten
  // GRPO_* variables), then the run's three.
  ASSERT_EQ(v.env.size(), 15u);
  const auto value_of = [&](const std::string& name) {
    for (const auto& e : v.env) {
      if (e.name == name) return e.value;
    }
    return std::string("(missing)");
  };
  EXPECT_EQ(value_of("GRPO_TEST_QUOTING"), "'a b '\\''c'\\'' \"d\" $(e) `f`; g'");
  EXPECT_EQ(value_of("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(value_of("GRPO_TP"), "1");
  EXPECT_EQ(value_of("GRPO_DP"), "4");  // 2 nodes x 2 ranks, TP 1
  EXPECT_EQ(value_of("GRPO_PLAN_FILE"), "/shared/runs/golden-run/plan.json");
  EXPECT_TRUE(
      std::is_sorted(v.env.begin(), v.env.end() - 3,
                     [](const SbatchEnvVar& a, const SbatchEnvVar& b) { return a.name < b.name; }));
  EXPECT_EQ(v.env[v.env.size() - 2], (SbatchEnvVar{"GRPO_RUN_DIR", "/shared/runs/golden-run"}));
  EXPECT_EQ(v.env.back(), (SbatchEnvVar{"GRPO_RUN_ID", "golden-run"}));
  EXPECT_EQ(v.launcher, "/opt/grpo-launch/bin/grpo-launch");
  EXPECT_EQ(v.run_dir, "/shared/runs/golden-run");

  // NVIDIA: --gres from the profile, else --gpus-per-node.
  Plan a100 =
      fixed_plan(load_cluster_or_fail("a100x8"), "qwen3-30b-moe", ParallelDims{2, 1, 1, 4, 8, 1});
  auto with_gres = make_sbatch_view(a100, golden_options());
  ASSERT_TRUE(with_gres.ok());
  EXPECT_EQ(with_gres->gres, "gpu:8");
  EXPECT_EQ(with_gres->gpus_per_node, "");
  a100.cluster.slurm.gres.clear();
  auto without = make_sbatch_view(a100, golden_options());
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->gres, "");
  EXPECT_EQ(without->gpus_per_node, "8");
  // No lead: no --signal line.
  a100.cluster.slurm.signal_lead_seconds = 0;
  auto no_signal = make_sbatch_view(a100, golden_options());
  ASSERT_TRUE(no_signal.ok());
  EXPECT_EQ(no_signal->signal, "");
}

TEST(SbatchView, EveryOptionalDirectiveRendersInOrder) {
  Plan plan = slurm_test_plan();
  SlurmDefaults& s = plan.cluster.slurm;
  s.account = "proj-1";
  s.qos = "high";
  s.constraint = "ib&[rack1|rack2]";
  s.mem = "64G";
  s.gres = "nic:1";
  s.extra_args = {"--exclusive", "--mail-type=END,FAIL", "--comment=grpo"};
  const std::string script = render_or_fail(plan, golden_options());
  const std::vector<std::string> lines = {"#SBATCH --job-name=grpo-tiny-dense-slurm-test\n",
                                          "#SBATCH --nodes=2\n",
                                          "#SBATCH --ntasks-per-node=2\n",
                                          "#SBATCH --gres=nic:1\n",
                                          "#SBATCH --cpus-per-task=2\n",
                                          "#SBATCH --mem=64G\n",
                                          "#SBATCH --time=00:05:00\n",
                                          "#SBATCH --partition=debug\n",
                                          "#SBATCH --account=proj-1\n",
                                          "#SBATCH --qos=high\n",
                                          "#SBATCH --constraint=ib&[rack1|rack2]\n",
                                          "#SBATCH --requeue\n",
                                          "#SBATCH --signal=B:USR2@60\n",
                                          "#SBATCH --open-mode=append\n",
                                          "#SBATCH --output=/shared/runs/golden-run/slurm-%j.out\n",
                                          "#SBATCH --error=/shared/runs/golden-run/slurm-%j.err\n",
                                          "#SBATCH --exclusive\n",
                                          "#SBATCH --mail-type=END,FAIL\n",
                                          "#SBATCH --comment=grpo\n"};
  std::size_t pos = 0;
  for (const auto& l : lines) {
    const auto at = script.find(l, pos);
    ASSERT_NE(at, std::string::npos) << "missing or out of order: " << l << script;
    pos = at + l.size();
  }
  // No empty line inside the #SBATCH block (the false sections leave none).
  const auto first = script.find("#SBATCH");
  const auto last = script.rfind("#SBATCH");
  EXPECT_EQ(script.substr(first, last - first).find("\n\n"), std::string::npos) << script;
}

TEST(SbatchView, Refusals) {
  const auto refused = [](Plan plan, SbatchRunOptions o, const std::string& want,
                          ErrorKind kind = ErrorKind::kInvalidValue) {
    auto v = make_sbatch_view(plan, o);
    ASSERT_FALSE(v.ok()) << want;
    EXPECT_EQ(v.error().kind, kind) << v.error().str();
    EXPECT_NE(v.error().str().find(want), std::string::npos) << v.error().str();
    EXPECT_EQ(v.error().str().find('\n'), std::string::npos) << v.error().str();
  };
  const Plan base = slurm_test_plan();
  for (const std::string bad : {"--nodes=4", "--ntasks=8", "--ntasks-per-node=1", "--output=/x",
                                "--error=/x", "--open-mode=truncate", "--signal=USR1@5",
                                "--partition=x", "--account=y", "--job-name=z", "--no-requeue"}) {
    Plan p = base;
    p.cluster.slurm.extra_args = {bad};
    refused(p, golden_options(), "grpo-launch sets from the plan");
  }
  for (const std::string bad : {"-N 2", "--", "exclusive", "--Exclusive", "--x y", "--comment=a b",
                                "--comment=$(id)", "--comment=a\nb", "--comment='q'"}) {
    Plan p = base;
    p.cluster.slurm.extra_args = {bad};
    refused(p, golden_options(), "slurm.extra_args");
  }
  {
    Plan p = base;
    p.cluster.slurm.signal_lead_seconds = 70000;
    refused(p, golden_options(), "out of range (0..65535");
  }
  for (const std::string dir :
       {"/runs/a b", "/runs/%j", "/runs/x'y", "/runs/$(id)", "/runs/a\nb"}) {
    SbatchRunOptions o = golden_options();
    o.run_dir = dir;
    refused(base, o, "choose another --run-dir");
  }
  {
    SbatchRunOptions o = golden_options();
    o.run_dir = "relative/dir";
    refused(base, o, "must be absolute", ErrorKind::kInternal);
  }
  for (const std::string name : {"A B", "1X", "A-B", "A=B", "$(id)", ""}) {
    Plan p = base;
    p.env.job[name] = "v";
    refused(p, golden_options(), "not a valid environment variable name");
  }
  {
    Plan p = base;
    p.env.job["X"] = std::string("a\0b", 3);
    refused(p, golden_options(), "NUL");
  }
  {
    Plan p = base;
    p.env.job["GRPO_RUN_DIR"] = "/elsewhere";
    refused(p, golden_options(), "set by grpo-launch");
  }
  {
    Plan p = base;
    p.env.node = {{{"X", "1"}}, {}};
    refused(p, golden_options(), "per-node environment");
  }
  {
    Plan p = base;
    p.feasible = false;
    refused(p, golden_options(), "not runnable", ErrorKind::kInfeasible);
  }
  EXPECT_TRUE(validate_sbatch_value("f", "--x", "abc-1", "-").ok());
  EXPECT_FALSE(validate_sbatch_value("f", "--x", "", "-").ok());
  auto tab = validate_sbatch_value("f", "--x", "a\tb", "-");
  ASSERT_FALSE(tab.ok());
  EXPECT_NE(tab.error().message.find("'\\t' is not allowed"), std::string::npos)
      << tab.error().message;
  EXPECT_EQ(printable("a\nb\x01\xff"), "a\\nb\\x01\\xff");
}

// Every [slurm] field of hostile-slurm.toml, alone in an otherwise clean profile, is refused
// with a one-line error naming the field.
TEST(SbatchHostile, SlurmFieldsAreRefused) {
  const ClusterProfile hostile = load_cluster_or_fail("hostile-slurm");
  const ClusterProfile clean = load_cluster_or_fail("slurm-test");
  struct Field {
    const char* name;
    void (*copy)(SlurmDefaults& to, const SlurmDefaults& from);
  };
  const std::vector<Field> fields = {
      {"slurm.partition",
       [](SlurmDefaults& t, const SlurmDefaults& f) { t.partition = f.partition; }},
      {"slurm.account", [](SlurmDefaults& t, const SlurmDefaults& f) { t.account = f.account; }},
      {"slurm.qos", [](SlurmDefaults& t, const SlurmDefaults& f) { t.qos = f.qos; }},
      {"slurm.time", [](SlurmDefaults& t, const SlurmDefaults& f) { t.time = f.time; }},
      {"slurm.mem", [](SlurmDefaults& t, const SlurmDefaults& f) { t.mem = f.mem; }},
      {"slurm.gres", [](SlurmDefaults& t, const SlurmDefaults& f) { t.gres = f.gres; }},
      {"slurm.constraint",
       [](SlurmDefaults& t, const SlurmDefaults& f) { t.constraint = f.constraint; }},
      {"slurm.extra_args",
       [](SlurmDefaults& t, const SlurmDefaults& f) { t.extra_args = f.extra_args; }},
  };
  for (const auto& field : fields) {
    ClusterProfile c = clean;
    field.copy(c.slurm, hostile.slurm);
    const Plan plan = fixed_plan(c, "tiny-dense", ParallelDims{1, 1, 1, 4, 1, 1});
    auto v = make_sbatch_view(plan, golden_options());
    ASSERT_FALSE(v.ok()) << field.name;
    EXPECT_EQ(v.error().kind, ErrorKind::kInvalidValue);
    EXPECT_NE(v.error().message.find(field.name), std::string::npos) << v.error().str();
    EXPECT_EQ(v.error().str().find('\n'), std::string::npos) << v.error().str();
  }
}

class SbatchHostileValues : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("grpo-hostile-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// hostile.toml's [env] values and a launcher path full of shell syntax: the script parses
// (bash -n), running its environment block executes nothing and yields the exact values, and
// running the whole script calls the (fake) launcher with exactly supervise --run-dir DIR.
TEST_F(SbatchHostileValues, AreQuotedAndNothingExecutes) {
  ClusterProfile c = load_cluster_or_fail("hostile");
  c.name = "hostile $(touch CANARY)\n`touch CANARY`; x";  // reaches the header comment
  Plan plan = fixed_plan(c, "tiny-dense", ParallelDims{1, 1, 1, 4, 1, 1});
  plan.model.name = "model 'x'\ntouch CANARY";
  ASSERT_GE(plan.env.job.size(), 9u);

  // The launcher lives in a directory whose name is hostile too.
  const fs::path bin = dir_ / "bin a'b\"c $(touch CANARY) `touch CANARY`; d\ne";
  fs::create_directories(bin);
  const fs::path launcher = bin / "grpo-launch";
  std::ofstream(launcher)
      << "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$OUT_ARGS\"\nenv -0 > \"$OUT_ENV\"\n";
  fs::permissions(launcher, fs::perms::owner_all);
  SbatchRunOptions o = golden_options();
  o.run_dir = (dir_ / "run").string();
  o.run_id = "run";
  o.launcher_path = launcher.string();
  const std::string script = render_or_fail(plan, o);
  ASSERT_FALSE(script.empty());
  EXPECT_NE(script.find("#SBATCH --job-name=grpo-model__x__touch_CANARY-hostile"),
            std::string::npos)
      << script;

  auto syntax = run_bash({"-n", "-c", script});
  EXPECT_EQ(process::shell_code(syntax.status), 0) << syntax.err;

  // The environment block alone.
  const auto begin = script.find("# The plan's environment");
  const auto end = script.find("\n\n", begin);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  std::string block = "cd \"$1\" || exit 9\n" + script.substr(begin, end - begin) + "\n";
  std::vector<std::string> names;
  for (const auto& [name, value] : plan.env.job) {
    block += "printf '%s\\0' \"${" + name + "}\"\n";
    names.push_back(name);
  }
  auto run = run_bash({"-c", block, "bash", dir_.string()});
  EXPECT_EQ(process::shell_code(run.status), 0) << run.err;
  EXPECT_EQ(run.err, "");
  const auto values = split_nul(run.out);
  ASSERT_EQ(values.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(values[i], plan.env.job.at(names[i])) << names[i];
  }
  EXPECT_FALSE(fs::exists(dir_ / "CANARY"));

  // The whole script, as the batch shell would run it (outside Slurm: the launcher is fake).
  const fs::path script_file = dir_ / "job.sbatch";
  std::ofstream(script_file) << script;
  auto whole =
      run_bash({"-c", "cd \"$1\" && bash \"$2\"", "bash", dir_.string(), script_file.string()},
               {{"OUT_ARGS", (dir_ / "args").string()}, {"OUT_ENV", (dir_ / "env").string()}});
  EXPECT_EQ(process::shell_code(whole.status), 0) << whole.err;
  EXPECT_EQ(split_nul(test::read_text(dir_ / "args")),
            (std::vector<std::string>{"supervise", "--run-dir", o.run_dir}));
  const auto env = split_nul(test::read_text(dir_ / "env"));
  for (const auto& [name, value] : plan.env.job) {
    EXPECT_NE(std::find(env.begin(), env.end(), name + "=" + value), env.end()) << name;
  }
  EXPECT_NE(std::find(env.begin(), env.end(), "GRPO_RUN_DIR=" + o.run_dir), env.end());
  EXPECT_FALSE(fs::exists(dir_ / "CANARY"));
  EXPECT_FALSE(fs::exists(bin / "CANARY"));
}

TEST(SbatchRender, StrictVariablesAndStandaloneLines) {
  auto view = make_sbatch_view(slurm_test_plan(), golden_options());
  ASSERT_TRUE(view.ok());
  auto unknown = render::render_sbatch("#SBATCH --nodes={{node}}\n", view.value(), "t.mustache");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().str(), "t.mustache: unknown template variable {{node}}");
  auto partial = render::render_sbatch("{{> other}}\n", view.value());
  ASSERT_FALSE(partial.ok());
  EXPECT_EQ(partial.error().kind, ErrorKind::kParse);
  auto unclosed = render::render_sbatch("{{#gres}}\nx\n", view.value());
  ASSERT_FALSE(unclosed.ok());
  EXPECT_EQ(unclosed.error().kind, ErrorKind::kParse);

  // Standalone section lines leave no line, whether the section renders or not; blank lines
  // and values are kept verbatim (no HTML escaping).
  const std::string tmpl =
      "a\n{{#gres}}\ng={{gres}}\n{{/gres}}\n  {{#partition}}  \np={{partition}}\n{{/partition}}\n"
      "\n{{! comment }}\n{{#env}}\n{{name}}={{value}}\n{{/env}}\n\nz {{launcher}}\n";
  SbatchView v = view.value();
  v.env = {{"A", "'<&>'"}, {"B", "\"x\""}};
  auto out = render::render_sbatch(tmpl, v);
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(out.value(), "a\np=debug\n\nA='<&>'\nB=\"x\"\n\nz /opt/grpo-launch/bin/grpo-launch\n");

  v.env = {{"A", "x\n\x01grpo-standalone\x01\ny"}};
  auto marker = render::render_sbatch(tmpl, v);
  ASSERT_FALSE(marker.ok());
}

// Every variable the template uses is one the view provides, and every one is documented.
TEST(SbatchRender, VariablesAreDocumented) {
  const std::string doc = test::read_text(test::source_dir() / "docs" / "sbatch-template.md");
  for (const auto& name : render::sbatch_variables()) {
    EXPECT_NE(doc.find("| `" + name + "` |"), std::string::npos)
        << name << " is missing from docs/sbatch-template.md";
  }
  auto out = render::render_sbatch(shipped_template(),
                                   make_sbatch_view(slurm_test_plan(), golden_options()).value());
  EXPECT_TRUE(out.ok()) << out.error().str();
}

}  // namespace
}  // namespace grpo::core
