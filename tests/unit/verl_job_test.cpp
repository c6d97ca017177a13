// submit --engine verl (docs/verl.md): the driver read from a launch script (core::verl_driver),
// the generated attempt and batch scripts (goldens, bash -n), hostile values reaching the driver
// exactly (run against the stand-in Ray and verl of tests/integration/verl_standin), and verl's
// console step lines as step events (supervise::parse_verl_step_line).
#include "grpo/verl/verl_job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "grpo/process/process_runner.h"
#include "grpo/render/sbatch_render.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/supervise/self_save.h"
#include "grpo/supervise/verl_engine.h"
#include "test_support.h"

namespace grpo::core {
namespace {

namespace fs = std::filesystem;

ParsedScript read_or_fail(const std::string& text, const std::string& name = "run.sh") {
  auto s = read_shell_script(text, name);
  if (!s.ok()) ADD_FAILURE() << s.error().str();
  return s.ok() ? s.value() : ParsedScript{};
}

VerlAttemptOptions golden_attempt_options() {
  VerlAttemptOptions o;
  o.version = "VERSION";
  o.run_dir = "/shared/runs/verl-golden";
  o.nodes = 2;
  o.gpus_per_node = 8;
  o.checkpoint_dir = "/shared/runs/verl-golden/checkpoints";
  return o;
}

process::Completion run_bash(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = {}) {
  process::PosixProcessRunner runner;
  process::CommandSpec cmd;
  cmd.argv = {"bash"};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.env = env;
  cmd.timeout = std::chrono::seconds(60);
  auto done = runner.run(cmd);
  if (!done.ok()) {
    ADD_FAILURE() << done.error().str();
    return {};
  }
  return done.value();
}

TEST(VerlDriver, ReadsTheCommandAndItsOverrides) {
  const auto script = read_or_fail(
      "export NCCL_DEBUG=WARN\n"
      "LR=1e-6\n"
      "PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo \\\n"
      "  actor_rollout_ref.actor.optim.lr=$LR \\\n"
      "  trainer.resume_mode=disable \\\n"
      "  trainer.default_local_dir=/ckpt/run1 \\\n"
      "  trainer.total_training_steps=40 \\\n"
      "  +trainer.extra='a b' \"$@\" 2>&1 | tee log.txt\n");
  auto d = verl_driver(script);
  ASSERT_TRUE(d.ok()) << d.error().str();
  EXPECT_EQ(d->command, (std::vector<std::string>{"python3", "-m", "verl.trainer.main_ppo"}));
  // resume_mode is the attempt script's (kept aside); "$@" is dropped.
  // No save_freq: set to total / 10 (verl's -1 saves nothing), with a note.
  EXPECT_EQ(d->overrides,
            (std::vector<std::string>{
                "actor_rollout_ref.actor.optim.lr=1e-6", "trainer.default_local_dir=/ckpt/run1",
                "trainer.total_training_steps=40", "+trainer.extra=a b", "trainer.save_freq=4"}));
  EXPECT_EQ(d->save_freq, 4);
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].rfind("trainer.save_freq=4 (was -1): ", 0), 0u) << d->notes[0];
  EXPECT_EQ(d->resume_mode, "disable");
  EXPECT_EQ(d->checkpoint_dir, "/ckpt/run1");
  EXPECT_EQ(d->total_steps, 40);
  // The script's exports and the command's own prefix.
  EXPECT_EQ(d->env, (std::vector<std::pair<std::string, std::string>>{{"NCCL_DEBUG", "WARN"},
                                                                      {"PYTHONUNBUFFERED", "1"}}));
  EXPECT_EQ(d->line, 3u);
}

TEST(VerlDriver, DropsWhatRunsTheDriverElsewhere) {
  // `ray job submit -- python3 ...` and `srun ... python3 ...`: only the interpreter onwards.
  const auto script = read_or_fail(
      "ray job submit --address=http://h:8265 -- python3 -u -m verl.trainer.main_ppo a.b=1\n");
  auto d = verl_driver(script);
  ASSERT_TRUE(d.ok()) << d.error().str();
  EXPECT_EQ(d->command, (std::vector<std::string>{"python3", "-u", "-m", "verl.trainer.main_ppo"}));
  EXPECT_EQ(d->overrides, (std::vector<std::string>{"a.b=1", "trainer.save_freq=10"}));
}

// The rules of verl_driver (docs/verl.md "What submit changes"), each with the verl or Ray source
// that makes it necessary.
TEST(VerlDriver, RulesMakeTheRunSupervisable) {
  auto rules = [](const std::string& args) {
    return verl_driver(read_or_fail("python3 -m verl.trainer.main_ppo " + args + "\n"));
  };
  // tracking.py: step lines only with console among the loggers.
  for (const char* logger : {"'[\"wandb\"]'", "\"['wandb','swanlab']\"", "wandb", "'[wandb]'"}) {
    auto d = rules(std::string("trainer.logger=") + logger + " trainer.save_freq=5");
    ASSERT_TRUE(d.ok()) << logger << ": " << d.error().str();
    EXPECT_EQ(d->overrides[0].rfind("trainer.logger=[\"console\",\"wandb\"", 0), 0u)
        << d->overrides[0];
    ASSERT_EQ(d->notes.size(), 1u) << logger;
  }
  for (const char* logger : {"'[\"console\",\"wandb\"]'", "console", "'[console]'"}) {
    auto d = rules(std::string("trainer.logger=") + logger + " trainer.save_freq=5");
    ASSERT_TRUE(d.ok()) << d.error().str();
    EXPECT_TRUE(d->notes.empty()) << logger;  // already there: unchanged
  }
  auto interp = rules("'trainer.logger=${oc.env:LOGGERS}'");
  ASSERT_FALSE(interp.ok());
  EXPECT_NE(interp.error().message.find("cannot tell whether it holds \"console\""),
            std::string::npos);
  // save_freq: kept when positive, replaced in place when <= 0, refused when not a number.
  auto kept = rules("trainer.save_freq=7 trainer.total_training_steps=100");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->save_freq, 7);
  EXPECT_TRUE(kept->notes.empty());
  auto neg = rules("trainer.save_freq=-1 trainer.total_training_steps=5");
  ASSERT_TRUE(neg.ok());
  EXPECT_EQ(neg->overrides[0], "trainer.save_freq=1");
  EXPECT_FALSE(rules("trainer.save_freq=often").ok());
  // worker.py init: joining a cluster refuses num_cpus / num_gpus / ...; null is verl's default.
  auto ray = rules(
      "ray_kwargs.ray_init.num_cpus=8 +ray_kwargs.ray_init.num_gpus=8 "
      "ray_kwargs.ray_init.num_cpus=null ray_kwargs.ray_init.runtime_env.x=1 trainer.save_freq=1");
  ASSERT_TRUE(ray.ok());
  EXPECT_EQ(ray->overrides, (std::vector<std::string>{"ray_kwargs.ray_init.num_cpus=null",
                                                      "ray_kwargs.ray_init.runtime_env.x=1",
                                                      "trainer.save_freq=1"}));
  EXPECT_EQ(ray->notes.size(), 2u);
  // ray_trainer.py _load_checkpoint raises with default_hdfs_dir: noted, kept.
  auto hdfs = rules("trainer.default_hdfs_dir=hdfs://x trainer.save_freq=1");
  ASSERT_TRUE(hdfs.ok());
  EXPECT_TRUE(hdfs->hdfs);
  EXPECT_FALSE(rules("trainer.default_hdfs_dir=null trainer.save_freq=1")->hdfs);
}

TEST(VerlDriver, RefusesWhatIsOnlyKnownWhenTheScriptRuns) {
  const auto script = read_or_fail(
      "python3 -m verl.trainer.main_ppo \\\n  data.train_files=$(ls /data | head -1)\n");
  auto d = verl_driver(script);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, ErrorKind::kInvalidValue);
  EXPECT_EQ(d.error().where.line, 2u);
  EXPECT_EQ(d.error().where.column, 3u);
  EXPECT_NE(d.error().message.find("is not known before the job starts"), std::string::npos)
      << d.error().message;
  auto none = verl_driver(read_or_fail("echo hello\n"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::kParse);
}

TEST(GoldenVerl, AttemptAndBatchScripts) {
  const auto path = test::source_dir() / "tests" / "data" / "verl" / "standin_run.sh";
  ShellReadOptions ro;  // HOME=/root as check reads it
  auto script = read_shell_script(test::read_text(path), "standin_run.sh", ro);
  ASSERT_TRUE(script.ok()) << script.error().str();
  auto d = verl_driver(script.value());
  ASSERT_TRUE(d.ok()) << d.error().str();
  auto attempt = verl_attempt_script(d.value(), golden_attempt_options());
  ASSERT_TRUE(attempt.ok()) << attempt.error().str();
  test::expect_golden("verl-attempt.sh", attempt.value());
  auto syntax = run_bash({"-n", "-c", attempt.value()});
  EXPECT_EQ(process::shell_code(syntax.status), 0) << syntax.err;

  SbatchRunOptions so;
  so.run_dir = "/shared/runs/verl-golden";
  so.launcher_path = "/opt/grpo-launch/bin/grpo-launch";
  so.run_id = "verl-golden";
  so.version = "VERSION";
  auto view = make_verl_sbatch_view(d.value(), test::cluster("a100x8"), 2, 8, "standin_run", so);
  ASSERT_TRUE(view.ok()) << view.error().str();
  EXPECT_EQ(view->nodes, "2");
  EXPECT_EQ(view->ntasks_per_node, "1");  // one Ray node per Slurm node
  auto text = render::render_sbatch(
      test::read_text(test::source_dir() / "templates" / "sbatch.mustache"), view.value());
  ASSERT_TRUE(text.ok()) << text.error().str();
  test::expect_golden("sbatch-verl.sh", text.value());
  auto s2 = run_bash({"-n", "-c", text.value()});
  EXPECT_EQ(process::shell_code(s2.status), 0) << s2.err;
}

TEST(VerlSbatch, RefusesANameGrpoLaunchSets) {
  VerlDriver d;
  d.env = {{"GRPO_RUN_DIR", "/elsewhere"}};
  SbatchRunOptions so;
  so.run_dir = "/shared/r";
  so.launcher_path = "/bin/grpo-launch";
  so.run_id = "r";
  auto view = make_verl_sbatch_view(d, test::cluster("a100x8"), 1, 8, "x", so);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.error().kind, ErrorKind::kInvalidValue);
}

// Hostile values in overrides, exports and the run directory reach the stand-in driver exactly,
// and nothing in them is executed (no canary file appears).
TEST(VerlHostile, ValuesReachTheDriverVerbatim) {
  const fs::path dir =
      fs::temp_directory_path() / ("grpo-verl-hostile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string canary = (dir / "canary").string();
  const std::string evil = "$(touch " + canary + ")`touch " + canary + "`; touch " + canary;
  // The script, written the way a user would quote these values.
  const std::string text =
      "export HOSTILE_ENV=" + shell_quote("x " + evil + " 'q' \"d\"") +
      "\n"
      "python3 -m verl.trainer.main_ppo \\\n"
      "  trainer.experiment_name=" +
      shell_quote("it's a \"run\" " + evil) +
      " \\\n"
      "  data.train_files=" +
      shell_quote("/data/my files/*.parquet\nnext line") +
      " \\\n"
      "  trainer.nnodes=1 trainer.total_training_steps=1 trainer.save_freq=-1\n";
  auto d = verl_driver(read_or_fail(text));
  ASSERT_TRUE(d.ok()) << d.error().str();
  VerlAttemptOptions o = golden_attempt_options();
  o.nodes = 1;
  o.run_dir = (dir / "run 'x' $(touch canary)").string();
  o.checkpoint_dir = o.run_dir + "/checkpoints";
  auto attempt = verl_attempt_script(d.value(), o);
  ASSERT_TRUE(attempt.ok()) << attempt.error().str();
  const fs::path file = dir / "verl-attempt.sh";
  std::ofstream(file) << attempt.value();
  const fs::path standin = test::source_dir() / "tests" / "integration" / "verl_standin";
  std::map<std::string, std::string> env = {
      {"PATH", (standin / "bin").string() + ":" + std::getenv("PATH")},
      {"PYTHONPATH", (standin / "python").string()},
      {"GRPO_STANDIN_STATE", (dir / "state").string()},
      {"GRPO_STANDIN_STEP_S", "0"},
      {"HOSTILE_ENV", d->env.front().second},
  };
  auto run = run_bash({"-c", "cd \"$1\" && bash \"$2\"", "bash", dir.string(), file.string()}, env);
  EXPECT_EQ(process::shell_code(run.status), 0) << run.err << run.out;
  EXPECT_FALSE(fs::exists(canary)) << "a hostile value was executed";
  std::ifstream in(dir / "state" / "driver.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line)) << run.err;
  const auto j = nlohmann::json::parse(line);
  const std::vector<std::string> argv = j["argv"].get<std::vector<std::string>>();
  EXPECT_EQ(argv, (std::vector<std::string>{"trainer.experiment_name=it's a \"run\" " + evil,
                                            "data.train_files=/data/my files/*.parquet\nnext line",
                                            "trainer.nnodes=1", "trainer.total_training_steps=1",
                                            "trainer.save_freq=1",
                                            "trainer.default_local_dir=" + o.checkpoint_dir}));
  EXPECT_EQ(d->env.front().first, "HOSTILE_ENV");
  EXPECT_EQ(d->env.front().second, "x " + evil + " 'q' \"d\"");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grpo::core

namespace grpo::supervise {
namespace {

TEST(VerlStepLine, ConsoleLinesBecomeStepEvents) {
  // verl/utils/tracking.py LocalLogger: "step:N - key:value - ...", here behind Ray's coloured
  // "(TaskRunner pid=N)" prefix and with a numpy 2 scalar as pprint.pformat writes it.
  const auto e = parse_verl_step_line(
      "\x1b[36m(TaskRunner pid=4711)\x1b[0m step:12 - training/global_step:12 - "
      "actor/pg_loss:np.float64(-0.25) - actor/kl_loss:0.001 - critic/score/mean:0.625 - "
      "timing_s/step:41.5 - perf/total_num_tokens:40960 - perf/throughput:1234.5 - "
      "val-core/openai/gsm8k/reward/mean@1:0.5 - actor/entropy:nan - timing_s/testing:3.5 - "
      "timing_s/save_checkpoint:20");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["type"], "step");
  EXPECT_EQ((*e)["step"], 12);
  EXPECT_DOUBLE_EQ((*e)["pg_loss"].get<double>(), -0.25);
  EXPECT_DOUBLE_EQ((*e)["kl"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ((*e)["reward_mean"].get<double>(), 0.625);
  // ray_trainer.py fit times validation and the save apart from timing_s/step: wall_s has all.
  EXPECT_DOUBLE_EQ((*e)["wall_s"].get<double>(), 65.0);
  EXPECT_DOUBLE_EQ((*e)["step_s"].get<double>(), 41.5);
  EXPECT_EQ((*e)["tokens"], 40960);
  EXPECT_DOUBLE_EQ((*e)["val_reward"].get<double>(), 0.5);
  EXPECT_FALSE(e->contains("entropy"));  // nan is dropped
  // Without a prefix, and with only the step.
  const auto bare = parse_verl_step_line("step:3 - training/global_step:3");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ((*bare)["step"], 3);
  // fit's validation before training is logged at the loaded step: not a training step.
  EXPECT_FALSE(
      parse_verl_step_line("(TaskRunner pid=7) step:0 - val-core/gsm8k/reward/mean@1:0.1"));
  EXPECT_FALSE(parse_verl_step_line("step:3"));
}

TEST(VerlStepLine, SaveLinesAreRecognised) {
  EXPECT_TRUE(is_verl_save_line("(TaskRunner pid=3) local_global_step_folder: ckpt/global_step_4"));
  EXPECT_TRUE(is_verl_save_line("Force saving checkpoint: ESI instance expiration approaching."));
  EXPECT_FALSE(is_verl_save_line("step:4 - training/global_step:4"));
}

TEST(VerlResume, TheScriptsModeUntilTheRunSavedThenAuto) {
  const std::filesystem::path dir = "/ckpt";
  // No checkpoint of the run's own: the script's mode, whatever it is.
  for (const std::string mode : {"disable", "resume_path", "auto", ""}) {
    const auto r = verl_resume_for(-1, mode, false, dir);
    EXPECT_EQ(r.mode, mode);
    EXPECT_EQ(r.step, -1);
  }
  // A checkpoint of its own: auto (verl loads the tracker's), whatever the script said.
  for (const std::string mode : {"disable", "resume_path", ""}) {
    const auto r = verl_resume_for(8, mode, false, dir);
    EXPECT_EQ(r.mode, "auto");
    EXPECT_EQ(r.step, 8);
    EXPECT_NE(r.from.find("/ckpt/global_step_8"), std::string::npos) << r.from;
  }
  // default_hdfs_dir: verl raises for anything but disable; the script's mode stays.
  EXPECT_EQ(verl_resume_for(8, "disable", true, dir).mode, "disable");
  EXPECT_EQ(verl_resume_for(8, "disable", true, dir).step, -1);
}

TEST(VerlStepLine, OtherLinesAreNotSteps) {
  for (const char* line :
       {"", "Training from scratch", "(TaskRunner pid=1) Found checkpoint: /x/global_step_2",
        "step:abc - a:1", "step: - a:1", "steps:3 - a:1", "(TaskRunner pid=1)step:3",
        "{\"type\":\"step\",\"step\":3}"}) {
    EXPECT_FALSE(parse_verl_step_line(line).has_value()) << line;
  }
}

TEST(VerlCheckpoint, NewestFromTheTracker) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("grpo-verl-ckpt-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  EXPECT_EQ(newest_verl_checkpoint(dir), -1);
  fs::create_directories(dir / "global_step_4");
  std::ofstream(dir / "global_step_4" / "data.pt") << "x";
  std::ofstream(dir / "latest_checkpointed_iteration.txt") << "6";
  EXPECT_EQ(newest_verl_checkpoint(dir), -1);  // global_step_6 is not there
  std::ofstream(dir / "latest_checkpointed_iteration.txt") << "4\n";
  EXPECT_EQ(newest_verl_checkpoint(dir), -1);  // only the driver's data.pt: no model state
  fs::create_directories(dir / "global_step_4" / "actor");
  EXPECT_EQ(newest_verl_checkpoint(dir), -1);  // an empty actor/
  std::ofstream(dir / "global_step_4" / "actor" / "model_world_size_1_rank_0.pt") << "x";
  EXPECT_EQ(newest_verl_checkpoint(dir), 4);
  // Written before the run was submitted: another run's.
  const auto mtime = fs::last_write_time(dir / "latest_checkpointed_iteration.txt");
  fs::last_write_time(dir / "latest_checkpointed_iteration.txt", mtime - std::chrono::hours(1));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(newest_verl_checkpoint(dir, now - 60), -1);
  EXPECT_EQ(newest_verl_checkpoint(dir, now - 7200), 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grpo::supervise

namespace grpo::supervise {
namespace {

// self_save.h by hand: E = 1000, R = 180 -> save_by 820, grace_end 830 (min(10, 45)),
// deadline 970 (E - min(30, 60)); R = 45 -> 955, 965 (min(10, 11.25)), 985 (E - min(30, 15)).
TEST(SelfSave, PlanAndWaitRule) {
  const SelfSavePlan p = self_save_plan(1000, 0);  // 0: the default reserve, 180 s
  EXPECT_DOUBLE_EQ(p.save_by, 820);
  EXPECT_DOUBLE_EQ(p.grace_end, 830);
  EXPECT_DOUBLE_EQ(p.deadline, 970);
  const SelfSavePlan q = self_save_plan(1000, 45);
  EXPECT_DOUBLE_EQ(q.save_by, 955);
  EXPECT_DOUBLE_EQ(q.grace_end, 965);
  EXPECT_DOUBLE_EQ(q.deadline, 985);
  using W = SelfSaveWait;
  EXPECT_EQ(self_save_wait(p, 820, false, false), W::kStop);  // caught up: at once
  EXPECT_EQ(self_save_wait(p, 820, true, false), W::kWait);   // a save in progress
  EXPECT_EQ(self_save_wait(p, 960, true, false), W::kWait);
  EXPECT_EQ(self_save_wait(p, 970, true, false), W::kPastDeadline);
  EXPECT_EQ(self_save_wait(p, 825, false, true), W::kWait);  // a late save line, in the grace
  EXPECT_EQ(self_save_wait(p, 830, false, true), W::kStop);  // ... not after it
  EXPECT_EQ(self_save_wait(std::nullopt, 0, true, true), W::kWait);  // no end: the caller bounds
  EXPECT_EQ(self_save_wait(std::nullopt, 0, false, true), W::kStop);
}

}  // namespace
}  // namespace grpo::supervise
