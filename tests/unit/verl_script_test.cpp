// `plan --emit verl` (verl_script.h): goldens, the round trip through the checker for every shipped
// profile x model, the keys against verl's own key history, and the script run by real bash with
// a stand-in python3 that records what verl would receive.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "grpo/core/text.h"
#include "grpo/plan/plan_render.h"
#include "grpo/shell/shell_script.h"
#include "grpo/verl/checker.h"
#include "grpo/verl/verl_script.h"
#include "test_support.h"

namespace grpo::core {
namespace {

// The workload settings no profile field sets (verl's own knobs that the memory model reads).
enum class Knob { kNone, kDynamicBatch, kLora, kEntropyChunking };

Plan plan_for(const std::string& cluster, const std::string& model,
              const std::vector<std::string>& sets = {}, Knob knob = Knob::kNone) {
  PlanRequest req;
  std::vector<Override> all, profile;
  for (const auto& s : sets) all.push_back(parse_override(s).value());
  EXPECT_TRUE(split_layout_overrides(all, req.constraints, profile).ok());
  req.cluster = test::cluster(cluster, profile);
  req.model = test::model(model);
  WorkloadSpec& w = req.cluster.grpo;
  if (knob == Knob::kDynamicBatch) w.max_token_len_per_gpu = 8192;
  if (knob == Knob::kLora) {
    w.lora.rank = 32;
    w.lora.alpha = 64;
  }
  if (knob == Knob::kEntropyChunking) w.entropy_chunking = true;
  return make_plan(req);
}

std::string emit(const Plan& plan) {
  auto s = render_verl_script(plan, {"0.0-test", ""});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().str());
  return s.ok() ? s.value() : std::string{};
}

Result<CheckReport> check_text(const std::string& text, const std::string& profile) {
  auto script = read_shell_script(text, "emitted.sh");
  if (!script.ok()) return script.error();
  CheckOptions options;
  options.profile = profile;  // the model comes from actor_rollout_ref.model.path
  return check_script(script.value(), test::schema(), test::shipped(), options);
}

// The header as `grpo-launch plan ... --emit verl` writes it (the version as a placeholder, as in
// the sbatch goldens).
TEST(GoldenVerlScript, MegatronAndFsdp) {
  auto golden = [](const std::string& name, const Plan& plan, const std::string& command) {
    auto s = render_verl_script(plan, {"VERSION", command});
    ASSERT_TRUE(s.ok()) << s.error().str();
    test::expect_golden(name, s.value());
  };
  golden("verl-a100x8-qwen3-30b-moe.sh", plan_for("a100x8", "qwen3-30b-moe"),
         "grpo-launch plan --profile a100x8 --model qwen3-30b-moe --emit verl");
  golden("verl-fsdp-h100-x8-qwen2.5-7b.sh", plan_for("h100-x8", "qwen2.5-7b", {"backend=fsdp"}),
         "grpo-launch plan --profile h100-x8 --model qwen2.5-7b --set backend=fsdp --emit verl");
}

// What the checker reads back must be what the plan chose. Every field is compared, so an
// override the script forgets (verl's default then applies) or misspells shows up here.
void expect_same_run(const Plan& plan, const CheckedRun& run, const std::string& what) {
  const Layout& p = plan.best.layout;
  const Layout& r = run.layout;
  SCOPED_TRACE(what);
  EXPECT_EQ(run.strategy, p.backend == Backend::kFsdp ? "fsdp" : "megatron");
  EXPECT_EQ(run.model, plan.model.name);
  EXPECT_EQ(run.nodes, plan.cluster.nodes);
  EXPECT_EQ(run.gpus_per_node, plan.cluster.gpus_per_node);
  EXPECT_EQ(r.dims, p.dims);
  EXPECT_EQ(r.micro_batch, p.micro_batch);
  EXPECT_EQ(r.rollout_tp, p.rollout_tp);
  EXPECT_EQ(r.rollout_dp, p.rollout_dp);
  EXPECT_EQ(r.rollout_pp, p.rollout_pp);
  EXPECT_EQ(r.rollout_ep, p.rollout_ep);
  EXPECT_EQ(r.offload, p.offload);
  EXPECT_EQ(r.recompute, p.recompute);
  EXPECT_EQ(r.backend, p.backend);
  EXPECT_EQ(r.vision_data_parallel, p.vision_data_parallel);
  if (p.backend != Backend::kFsdp) {
    EXPECT_EQ(r.sequence_parallel, p.sequence_parallel);
    EXPECT_EQ(r.distributed_optimizer, p.distributed_optimizer);
    EXPECT_EQ(r.recompute_method, p.recompute_method);
    if (p.recompute == Recompute::kFull) {
      EXPECT_EQ(r.recompute_layers, p.recompute_layers);
    }
    EXPECT_EQ(r.first_stage_layers, p.first_stage_layers);
    EXPECT_EQ(r.last_stage_layers, p.last_stage_layers);
    EXPECT_EQ(r.split_counts_embedding, p.split_counts_embedding);
    EXPECT_EQ(r.split_counts_loss, p.split_counts_loss);
    EXPECT_EQ(r.vpp, p.vpp);
    EXPECT_EQ(r.pipeline_layout, p.pipeline_layout);
    // The script sets the reference's TP / PP to the actor's (ref_tp 0 means "the actor's").
    EXPECT_EQ(r.ref_tp, p.ref_tp > 0 ? p.ref_tp : p.dims.tp);
    EXPECT_EQ(r.ref_pp, p.ref_pp > 0 ? p.ref_pp : p.dims.pp);
  }
  const WorkloadSpec& w = plan.workload;
  const WorkloadSpec& c = run.workload;
  EXPECT_EQ(c.train_batch_size, w.train_batch_size);
  EXPECT_EQ(c.rollout_n, w.rollout_n);
  EXPECT_EQ(c.ppo_mini_batch_size, w.ppo_mini_batch_size);
  EXPECT_EQ(c.ppo_epochs, w.ppo_epochs);
  EXPECT_EQ(c.max_prompt_length, w.max_prompt_length);
  EXPECT_EQ(c.max_response_length, w.max_response_length);
  EXPECT_EQ(c.gpu_memory_utilization, w.gpu_memory_utilization);
  EXPECT_EQ(c.max_num_seqs, w.max_num_seqs);
  EXPECT_EQ(c.use_kl_loss, w.use_kl_loss);
  EXPECT_EQ(c.dtype, w.dtype);
  EXPECT_EQ(c.remove_padding, w.remove_padding);
  EXPECT_EQ(c.max_token_len_per_gpu, w.max_token_len_per_gpu);
  EXPECT_EQ(c.fused_logprob, w.fused_logprob);
  EXPECT_EQ(c.free_cache_engine, w.free_cache_engine);
  EXPECT_EQ(c.lora.rank, w.lora.rank);
  // With the same layout and workload the checker's memory estimate is the plan's.
  ASSERT_TRUE(run.memory.has_value());
  EXPECT_NEAR(run.memory->training.total(), plan.best.memory.training.total(), 1.0);
  EXPECT_NEAR(run.memory->rollout.total(), plan.best.memory.rollout.total(), 1.0);
}

// The round trip of issue 15: every shipped cluster profile x every shipped model whose plan is
// feasible, with the Megatron backend (the default) and with FSDP. `check` of the emitted script
// finds no error and no warning and reads back the plan's layout and batch sizes. Notes (info)
// are allowed: none is expected today, and the test prints any it sees.
TEST(VerlScript, RoundTripEveryShippedProfileAndModel) {
  int emitted = 0, infeasible = 0, cpu = 0, alternatives = 0;
  for (const auto& cluster : test::shipped().names(CatalogKind::kCluster)) {
    for (const auto& model : test::shipped().names(CatalogKind::kModel)) {
      for (const bool fsdp : {false, true}) {
        const std::string what = cluster + " x " + model + (fsdp ? " (fsdp)" : "");
        const Plan plan =
            plan_for(cluster, model,
                     fsdp ? std::vector<std::string>{"backend=fsdp"} : std::vector<std::string>{});
        if (!plan_ok(plan)) {
          ++infeasible;
          EXPECT_FALSE(render_verl_script(plan).ok()) << what;
          continue;
        }
        if (plan.cluster.device.vendor == DeviceVendor::kCpu) {
          ++cpu;
          const auto refused = render_verl_script(plan);
          ASSERT_FALSE(refused.ok()) << what;
          EXPECT_NE(refused.error().message.find("verl runs on GPUs"), std::string::npos);
          continue;
        }
        ++emitted;
        const std::string text = emit(plan);
        auto report = check_text(text, cluster);
        ASSERT_TRUE(report.ok()) << what << ": " << report.error().str();
        ASSERT_EQ(report->runs.size(), 1u) << what;
        const CheckedRun& run = report->runs.front();
        for (const auto& d : run.diagnostics) {
          ADD_FAILURE() << what << ": check says " << to_string(d.code) << " at " << d.where.str()
                        << ": " << d.message;
        }
        EXPECT_TRUE(run.passes_args) << what;
        expect_same_run(plan, run, what);
        // The runners-up too (other TP / PP / EP families), as if each had won.
        for (std::size_t i = 0; i < plan.alternatives.size(); ++i) {
          Plan alt = plan;
          alt.best = plan.alternatives[i];
          alt.env = build_env(alt.cluster, alt.best.layout);
          const std::string alt_what = what + " alternative " + std::to_string(i + 2);
          auto alt_report = check_text(emit(alt), cluster);
          ASSERT_TRUE(alt_report.ok()) << alt_what << ": " << alt_report.error().str();
          for (const auto& d : alt_report->runs.front().diagnostics) {
            ADD_FAILURE() << alt_what << ": check says " << to_string(d.code) << " at "
                          << d.where.str() << ": " << d.message;
          }
          expect_same_run(alt, alt_report->runs.front(), alt_what);
          ++alternatives;
        }
      }
    }
  }
  // 9 profiles x 17 models x 2 backends; local-cpu's plans are refused (CPU), the rest is
  // counted so that a change in feasibility is noticed.
  std::cout << "[ round trip ] emitted " << emitted << " (and " << alternatives
            << " runners-up), infeasible " << infeasible << ", cpu " << cpu << "\n";
  EXPECT_GT(emitted, 100);
}

// Plans with the settings the default search rarely picks: fixed TP/PP with an uneven pipeline,
// full recompute, every offload, the CPU optimizer, a dynamic batch, fp16, LoRA.
TEST(VerlScript, RoundTripOfFixedSettings) {
  struct Case {
    std::string cluster, model;
    std::vector<std::string> sets;
    Knob knob = Knob::kNone;
  };
  const std::vector<Case> cases = {
      {"a100x8", "qwen2.5-7b", {"tp=2", "pp=2", "recompute=full"}},
      {"a100x8", "qwen3-30b-moe", {"pp=2", "ep=4", "etp=1"}},
      {"a100x8", "qwen3-8b", {"pp=4"}},  // 36 layers over 4 stages
      {"moe-8node", "qwen3-235b-moe", {"param_offload=true", "optimizer_offload=true"}},
      {"a100-40g-x4", "qwen2.5-7b", {"cpu_optimizer=true"}},
      {"a100x8", "qwen2.5-7b", {}, Knob::kDynamicBatch},
      {"v100-32g-x8", "qwen2.5-1.5b", {"grpo.dtype=fp16"}},
      {"a100x8", "qwen2.5-3b", {}, Knob::kLora},
      {"h100-x8", "qwen2.5-7b", {"backend=fsdp", "param_offload=true", "recompute=none"}},
      {"h100-x8", "qwen2.5-7b", {"backend=fsdp", "cp=2"}},
      {"h100-x8", "qwen2.5-7b", {"backend=fsdp"}, Knob::kDynamicBatch},
      {"npu-910b-x8", "qwen2.5-7b", {}},
  };
  for (const auto& [cluster, model, sets, knob] : cases) {
    std::string what = cluster + " x " + model;
    for (const auto& s : sets) what += " " + s;
    what += " knob " + std::to_string(static_cast<int>(knob));
    const Plan plan = plan_for(cluster, model, sets, knob);
    ASSERT_TRUE(plan_ok(plan)) << what << "\n" << render_summary(plan);
    auto report = check_text(emit(plan), cluster);
    ASSERT_TRUE(report.ok()) << what << ": " << report.error().str();
    for (const auto& d : report->runs.front().diagnostics) {
      ADD_FAILURE() << what << ": check says " << to_string(d.code) << " at " << d.where.str()
                    << ": " << d.message;
    }
    expect_same_run(plan, report->runs.front(), what);
  }
}

// verl's key history (data/schema/verl_key_history.tsv, parsed here on its own): every key the
// script sets plainly is in the YAML of the verl it is written for (0.7.0, the pinned version)
// for its backend, so Hydra accepts `key=value`; every `++` key lies in one of verl's free-form
// mappings of that version, and Megatron fields are TransformerConfig fields.
TEST(VerlScript, KeysAreVerl070Keys) {
  struct Key {
    std::set<std::string> variants, versions;
    std::string origin;
  };
  std::map<std::string, Key> history;
  std::istringstream in(
      test::read_text(test::source_dir() / "data" / "schema" / "verl_key_history.tsv"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string field; std::getline(ls, field, '\t');) f.push_back(field);
    ASSERT_EQ(f.size(), 4u) << line;
    Key k;
    std::stringstream vs(f[1]), ver(f[2]);
    for (std::string v; std::getline(vs, v, ',');) k.variants.insert(v);
    for (std::string v; std::getline(ver, v, ',');) k.versions.insert(v);
    k.origin = f[3];
    history[f[0]] = k;
  }
  std::set<std::string> tc_fields;
  std::istringstream tcin(
      test::read_text(test::source_dir() / "data" / "schema" / "megatron_transformer_config.txt"));
  for (std::string line; std::getline(tcin, line);) {
    if (!line.empty() && line[0] != '#') tc_fields.insert(line.substr(0, line.find('\t')));
  }
  const std::vector<std::pair<Plan, std::string>> plans = {
      {plan_for("a100x8", "qwen3-30b-moe"), "megatron"},
      {plan_for("a100x8", "qwen2.5-7b", {"tp=2", "pp=2", "recompute=full"}), "megatron"},
      {plan_for("a100x8", "qwen3-8b", {"pp=4"}), "megatron"},
      {plan_for("a100-40g-x4", "qwen2.5-7b", {"cpu_optimizer=true"}), "megatron"},
      {plan_for("a100x8", "qwen2.5-7b", {}, Knob::kDynamicBatch), "megatron"},
      {plan_for("v100-32g-x8", "qwen2.5-1.5b", {"grpo.dtype=fp16"}), "megatron"},
      {plan_for("a100x8", "qwen2.5-3b", {}, Knob::kLora), "megatron"},
      {plan_for("npu-910b-x8", "qwen2.5-7b"), "megatron"},
      {plan_for("h100-x8", "qwen2.5-7b", {"backend=fsdp"}, Knob::kDynamicBatch), "fsdp"},
      {plan_for("h100-x8", "qwen2.5-7b", {"backend=fsdp"}, Knob::kEntropyChunking), "fsdp"},
  };
  for (const auto& [plan, variant] : plans) {
    ASSERT_TRUE(plan_ok(plan)) << render_summary(plan);
    for (const auto& o : verl_overrides(plan)) {
      SCOPED_TRACE(o.word() + " (" + variant + ")");
      if (o.prefix.empty()) {
        const auto it = history.find(o.key);
        ASSERT_NE(it, history.end()) << "not a verl key";
        EXPECT_TRUE(it->second.versions.count("v0.7.0")) << "not in verl 0.7.0";
        EXPECT_TRUE(it->second.variants.count(variant)) << "not in the " << variant << " config";
        EXPECT_EQ(it->second.origin, "yaml") << "a plain override needs a YAML key";
        continue;
      }
      EXPECT_EQ(o.prefix, "++");
      const std::string tc = "override_transformer_config.";
      const std::string opt = "override_optimizer_config.";
      const std::string kw = "engine_kwargs.";
      std::string parent, field;
      for (const std::string* m : {&tc, &opt, &kw}) {
        const auto at = o.key.find(*m);
        if (at == std::string::npos) continue;
        parent = o.key.substr(0, at + m->size() - 1);
        field = o.key.substr(at + m->size());
      }
      ASSERT_FALSE(parent.empty()) << "++ outside a free-form mapping";
      ASSERT_TRUE(history.count(parent)) << parent;
      EXPECT_TRUE(history[parent].versions.count("v0.7.0")) << parent;
      if (parent.ends_with("override_transformer_config")) {
        EXPECT_TRUE(tc_fields.count(field)) << field << " is no TransformerConfig field";
      }
    }
  }
}

// Runs `command` with sh: "<exit status> <stdout and stderr>" (through a file in `dir`).
std::string run_bash(const std::string& command, const std::filesystem::path& dir) {
  const auto out = dir / "bash.out";
  const int rc = std::system((command + " >" + out.string() + " 2>&1").c_str());
  return std::to_string(rc) + " " + test::read_text(out);
}

// bash itself reads the script: `bash -n` accepts it, and run with a stand-in python3 that
// records its arguments (NUL-separated) and environment, verl receives exactly the plan's
// overrides and environment, also when the profile's values and the model's id hold quotes,
// $(...), backquotes and newlines (nothing is executed: no file appears).
TEST(VerlScript, BashRunsItWithThePlansWordsAndEnvironment) {
  if (std::system("command -v bash >/dev/null 2>&1") != 0) GTEST_SKIP() << "no bash";
  // A directory of its own: other checkouts may run this test at the same time.
  std::string dir_template = (std::filesystem::temp_directory_path() / "verl-emit-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir_template.data()), nullptr);
  const std::filesystem::path dir = dir_template;
  std::filesystem::create_directories(dir / "bin");
  {
    std::ofstream stub(dir / "bin" / "python3");
    stub << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done >\"$OUT/argv\"\n"
            "env -0 >\"$OUT/env\"\n";
  }
  std::filesystem::permissions(dir / "bin" / "python3", std::filesystem::perms::owner_all);

  PlanRequest req;
  req.cluster = test::cluster("a100x8");
  req.model = test::model("qwen2.5-7b");
  const std::string hostile = "it's $(touch " + (dir / "pwned1").string() + ") `touch " +
                              (dir / "pwned2").string() + "` \"x\"\nnext \\ line";
  req.cluster.env["NCCL_DEBUG"] = hostile;
  req.model.hf_id = "Org/" + hostile;
  const Plan plan = make_plan(req);
  ASSERT_TRUE(plan.feasible);
  auto script = render_verl_script(plan);
  ASSERT_TRUE(script.ok()) << script.error().str();
  std::ofstream(dir / "run.sh") << script.value();

  EXPECT_EQ(run_bash("bash -n " + (dir / "run.sh").string(), dir), "0 ");
  EXPECT_EQ(run_bash("env -i PATH=" + (dir / "bin").string() + ":/usr/bin:/bin HOME=/h OUT=" +
                         dir.string() + " bash " + (dir / "run.sh").string() + " extra.key=1",
                     dir),
            "0 ");
  EXPECT_FALSE(std::filesystem::exists(dir / "pwned1"));
  EXPECT_FALSE(std::filesystem::exists(dir / "pwned2"));

  std::vector<std::string> argv;
  {
    const std::string raw = test::read_text(dir / "argv");
    std::size_t start = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\0') {
        argv.push_back(raw.substr(start, i - start));
        start = i + 1;
      }
    }
  }
  std::vector<std::string> want = {"-m",
                                   "verl.trainer.main_ppo",
                                   "--config-name=ppo_megatron_trainer",
                                   "data.train_files=/h/data/gsm8k/train.parquet",
                                   "data.val_files=/h/data/gsm8k/test.parquet",
                                   "actor_rollout_ref.model.path=Org/" + hostile};
  for (const auto& o : verl_overrides(plan)) want.push_back(o.word());
  want.push_back("extra.key=1");
  EXPECT_EQ(argv, want);

  std::map<std::string, std::string> env;
  {
    const std::string raw = test::read_text(dir / "env");
    std::size_t start = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\0') continue;
      const std::string kv = raw.substr(start, i - start);
      env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
      start = i + 1;
    }
  }
  EXPECT_EQ(env["NCCL_DEBUG"], hostile);
  EXPECT_EQ(env["NCCL_IB_HCA"], "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9");
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "eth0");
  EXPECT_EQ(env.count("GRPO_TP"), 0u);
  std::filesystem::remove_all(dir);
}

TEST(VerlScript, FsdpBackendRefusesMegatronOnlySettings) {
  const Plan plan = plan_for("a100x8", "qwen2.5-7b", {"backend=fsdp", "tp=2"});
  EXPECT_FALSE(plan_ok(plan));
  ASSERT_FALSE(plan.diagnostics.empty());
  EXPECT_EQ(plan.diagnostics.front().code, DiagCode::kInvalidSetting);
  EXPECT_NE(plan.diagnostics.front().message.find("tp"), std::string::npos);
  LayoutConstraints c;
  EXPECT_FALSE(apply_layout_setting(c, "backend", "deepspeed").ok());
}

}  // namespace
}  // namespace grpo::core
