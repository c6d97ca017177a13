// What `run` / `submit` hand the supervisor (grpo/app/launch.h): the user's trainer --set wins over
// what the plan supplies, also for the micro batch that the supervisor passes last.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "grpo/app/launch.h"
#include "grpo/job/trainer_args.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"
#include "test_support.h"

namespace grpo::app {
namespace {

namespace fs = std::filesystem;

core::Plan plan_with_micro_batch(int micro_batch) {
  core::Plan plan;
  plan.best.layout.micro_batch = micro_batch;
  return plan;
}

std::string micro(int v) {
  return std::string(supervise::kMicroBatchKey) + "=" + std::to_string(v);
}

TEST(SupervisorConfigFromLaunch, TheUsersMicroBatchWinsOverThePlans) {
  LaunchArgs args;
  EXPECT_EQ(supervisor_config(args, plan_with_micro_batch(8)).micro_batch, 8);
  args.trainer_sets = {"data.train_batch_size=16", micro(3)};
  EXPECT_EQ(supervisor_config(args, plan_with_micro_batch(8)).micro_batch, 3);
  args.trainer_sets.push_back(micro(5));  // the last --set wins, as in the trainer
  EXPECT_EQ(supervisor_config(args, plan_with_micro_batch(8)).micro_batch, 5);
  // Not a positive integer: the trainer refuses it; nothing is passed after it.
  for (const char* bad : {"=0", "=-2", "=four", "=", "=3.5"}) {
    args.trainer_sets = {std::string(supervise::kMicroBatchKey) + bad};
    EXPECT_FALSE(supervisor_config(args, plan_with_micro_batch(8)).micro_batch.has_value()) << bad;
  }
}

TEST(SupervisorConfigFromLaunch, TotalStepsFollowTheLastSetting) {
  EXPECT_EQ(total_steps({}), 400);
  EXPECT_EQ(total_steps({"trainer.sft_warmup_steps=2", "trainer.total_training_steps=4"}), 6);
  EXPECT_EQ(total_steps({"trainer.total_training_steps=4", "trainer.total_training_steps=9"}), 309);
}

// End to end through the supervisor: the argv of every attempt ends with the user's micro batch,
// not the plan's (the plan's used to be appended after the user's --set and silently win).
TEST(SupervisorConfigFromLaunch, EveryAttemptRunsWithTheUsersMicroBatch) {
  LaunchArgs args;
  args.trainer_sets = {micro(3)};
  supervise::FakeClock clock;
  supervise::SimulatedRunner runner{clock};
  process::FakeSignals signals;
  supervise::FakeJobControl job;
  job.slurm = false;
  supervise::NullStatusSink status;
  supervise::SupervisorOptions o;
  o.run_dir = fs::temp_directory_path() / ("grpo-launch-config-" + std::to_string(::getpid()));
  fs::remove_all(o.run_dir);
  o.trainer_argv = {"grpo-trainer", "--set", micro(3)};
  o.nodes = 1;
  o.ranks_per_node = 2;
  o.config = supervisor_config(args, plan_with_micro_batch(8));
  o.config.total_steps = 4;
  o.config.divisible_by.clear();
  runner.push(supervise::sim_trainer(2, 0, 4, 1.0, 2));
  supervise::SupervisorDeps deps{runner, clock, signals, job, status, [] { return -1; }, nullptr};
  auto sup = supervise::Supervisor::open(o, deps);
  ASSERT_TRUE(sup.ok()) << sup.error().str();
  auto code = sup.value()->run();
  ASSERT_TRUE(code.ok()) << code.error().str();
  EXPECT_EQ(code.value(), supervise::kExitSucceeded);
  ASSERT_EQ(runner.started().size(), 1u);
  const auto& argv = runner.started().front().argv;
  EXPECT_EQ(argv.back(), micro(3));
  for (const auto& w : argv) EXPECT_NE(w, micro(8));
  fs::remove_all(o.run_dir);
}

}  // namespace
}  // namespace grpo::app

namespace grpo::core {
namespace {

ModelSpec moe_with(int experts) {
  ModelSpec m;
  m.name = "m";
  m.num_experts = experts;
  m.experts_per_token = 2;
  return m;
}

TEST(EmbeddedTrainerLayout, RunsDataTensorPipelineAndExpertParallelismOnly) {
  const ModelSpec moe = moe_with(8);
  ModelSpec dense;
  dense.name = "d";
  // Qwen2.5-7B's shape (config.json): 28 heads, 4 K/V heads, FFN 18944, vocabulary 152064.
  dense.num_attention_heads = 28;
  dense.num_kv_heads = 4;
  dense.ffn_hidden_size = 18944;
  dense.vocab_size = 152064;
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 1, 1, 8, 1, 1}, false, dense), "");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 1, 1, 8, 8, 1}, false, moe), "");
  // TP 2 and 4 divide the 28 heads, the 4 K/V heads, the FFN and the vocabulary.
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 1, 1, 4, 1, 1}, false, dense), "");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{4, 1, 1, 2, 1, 1}, false, dense), "");
  // TP 8 does not divide 28 heads.
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{8, 1, 1, 1, 1, 1}, false, dense),
            "TP=8 does not split d (28 heads, 4 K/V heads, FFN 18944, vocabulary 152064): the "
            "embedded trainer needs TP to divide the heads, K/V heads, FFN and vocabulary");
  // Sequence parallelism runs with TP, on dense models by choice and on MoE models always
  // (Megatron-Core requires it there), with or without EP.
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 1, 1, 4, 1, 1}, true, dense), "");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 1, 1, 4, 1, 1}, false, moe),
            "TP=2 with the MoE model m needs sequence parallelism (set sequence_parallel=true)");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 1, 1, 4, 1, 1}, true, moe), "");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 1, 1, 2, 2, 1}, true, moe), "");
  // Pipeline parallelism runs, alone and with TP / EP; not with tied embeddings.
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 2, 1, 2, 1, 1}, true, moe), "");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 2, 1, 2, 1, 1}, false, dense), "");
  ModelSpec tied = dense;
  tied.tied_embeddings = true;
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 2, 1, 2, 1, 1}, false, tied),
            "PP=2 with d's tied embeddings is not built (the first and last stages would share "
            "the embedding); use PP=1");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 1, 2, 2, 1, 1}, false, dense),
            "the embedded trainer runs data, tensor, pipeline, expert and expert-tensor "
            "parallelism only; this layout needs CP=2 (set them to 1, or run your own trainer "
            "with --trainer-cmd)");
  // Expert tensor parallelism runs with ETP = TP (experts split over the TP group), alone and
  // with EP; any other ETP is refused.
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 1, 1, 1, 1, 2}, true, moe), "");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{2, 1, 1, 2, 2, 2}, true, moe), "");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 1, 1, 2, 1, 2}, false, moe),
            "ETP=2 with TP=1 is not built: the embedded trainer splits the experts over the TP "
            "group (set etp=1 or etp=tp)");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 1, 1, 2, 2, 1}, false, dense),
            "EP=2 needs a mixture-of-experts model; d is dense");
  EXPECT_EQ(embedded_trainer_unsupported(ParallelDims{1, 1, 1, 6, 3, 1}, false, moe),
            "EP=3 does not divide the 8 experts of m");
}

TEST(EmbeddedTrainerLayout, TrainsOnTheProfilesDevices) {
  // The shipped profiles say which devices they have (profiles/clusters/*.toml `vendor`).
  auto device_of = [](const std::string& cluster) {
    Plan plan;
    plan.cluster = test::cluster(cluster);
    return last_trainer_set(trainer_settings(plan), "trainer.device").value_or("");
  };
  EXPECT_EQ(device_of("a100x8"), "cuda");
  EXPECT_EQ(device_of("h20-96g-x8"), "cuda");
  EXPECT_EQ(device_of("local-cpu"), "cpu");
  // Asynchronous checkpoint writes only where a core is spare (GPU hosts).
  Plan gpu, cpu;
  gpu.cluster = test::cluster("a100x8");
  cpu.cluster = test::cluster("local-cpu");
  EXPECT_EQ(last_trainer_set(trainer_settings(gpu), "trainer.async_save"), "true");
  EXPECT_EQ(last_trainer_set(trainer_settings(cpu), "trainer.async_save"), "false");
  EXPECT_EQ(embedded_trainer_unsupported_device(test::cluster("a100x8")), "");
  EXPECT_EQ(embedded_trainer_unsupported_device(test::cluster("npu-910b-x8")),
            "the embedded trainer runs on CPUs and NVIDIA GPUs; npu-910b-x8 has Ascend NPUs (run "
            "your own trainer with --trainer-cmd)");
}

TEST(EmbeddedTrainerLayout, TrainsInTheWorkloadsDtype) {
  // verl's Megatron key and PrecisionType names; fp16 (loss scaling) is not built.
  Plan plan;
  plan.cluster = test::cluster("a100x8");
  auto dtype = [&](Dtype d) {
    plan.workload.dtype = d;
    return last_trainer_set(trainer_settings(plan), "actor_rollout_ref.actor.megatron.dtype")
        .value_or("");
  };
  EXPECT_EQ(dtype(Dtype::kBf16), "bfloat16");
  EXPECT_EQ(dtype(Dtype::kFp32), "float32");
  EXPECT_EQ(dtype(Dtype::kFp16), "float16");
  EXPECT_EQ(embedded_trainer_unsupported_dtype(plan.workload),
            "the embedded trainer trains in bf16 (fp32 master weights) or fp32; fp16 needs loss "
            "scaling, which it does not have (set grpo.dtype=bf16 or grpo.dtype=fp32)");
  plan.workload.dtype = Dtype::kBf16;
  EXPECT_EQ(embedded_trainer_unsupported_dtype(plan.workload), "");
}

TEST(EmbeddedTrainerLayout, ThePlannerSearchesOnlyWhatItRunsUnlessTheUserChose) {
  LayoutConstraints c;
  c.pp = 2;  // the user's choice stays (and is refused later, with the reason)
  c.ep = 4;
  LayoutConstraints loose = c;
  limit_to_embedded_trainer(loose, false);
  EXPECT_FALSE(loose.tp.has_value());  // TP is searched, and SP with it (the planner's default)
  EXPECT_FALSE(loose.sequence_parallel.has_value());
  EXPECT_FALSE(loose.distributed_optimizer.has_value());
  limit_to_embedded_trainer(c, true);
  EXPECT_FALSE(c.tp.has_value());
  EXPECT_EQ(c.pp, 2);
  EXPECT_EQ(c.cp, 1);
  EXPECT_FALSE(c.etp.has_value());  // searched: 1 or TP, both of which it runs
  EXPECT_EQ(c.ep, 4);
  EXPECT_FALSE(c.dp.has_value());
  EXPECT_EQ(c.distributed_optimizer, false);  // every rank holds the whole optimizer state
  EXPECT_EQ(c.optimizer_offload, false);
  EXPECT_EQ(c.recompute, Recompute::kNone);
}

TEST(EmbeddedTrainerLayout, WorldUnitKeepsEveryGroupWhole) {
  // lcm(tp*cp*pp, etp*ep*pp): TP=2 with EP=4 -> lcm(2, 4) = 4; PP=2 TP=2 EP=3 -> lcm(4, 6) = 12.
  EXPECT_EQ(layout_world_unit(ParallelDims{1, 1, 1, 8, 1, 1}), 1);
  EXPECT_EQ(layout_world_unit(ParallelDims{2, 1, 1, 4, 4, 1}), 4);
  EXPECT_EQ(layout_world_unit(ParallelDims{2, 2, 1, 3, 3, 1}), 12);
}

TEST(EmbeddedTrainerLayout, SettingsUseVerlsKeysAndMapBack) {
  Layout l;
  l.dims = ParallelDims{1, 1, 1, 4, 2, 1};
  l.rollout_tp = 2;
  const std::vector<std::string> want = {
      "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
      "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=1",
      "actor_rollout_ref.actor.megatron.context_parallel_size=1",
      "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2",
      "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1",
      "actor_rollout_ref.actor.megatron.sequence_parallel=false",
      "actor_rollout_ref.rollout.tensor_model_parallel_size=2"};
  EXPECT_EQ(trainer_layout_settings(l), want);
  const std::vector<std::string> back = {"tp",        "pp", "cp", "ep", "etp", "sequence_parallel",
                                         "rollout_tp"};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(layout_key_for_trainer_key(want[i].substr(0, want[i].find('='))), back[i]);
    EXPECT_TRUE(is_layout_key(back[i])) << back[i];
  }
  // With PP the stage split too (Megatron-Core's keys, inside verl's override_transformer_config).
  l.dims = ParallelDims{1, 2, 1, 4, 1, 1};
  l.first_stage_layers = 3;
  const std::string tc = "actor_rollout_ref.actor.megatron.override_transformer_config.";
  const std::vector<std::string> with_pp = trainer_layout_settings(l);
  ASSERT_EQ(with_pp.size(), want.size() + 2);
  EXPECT_EQ(with_pp[2], tc + "num_layers_in_first_pipeline_stage=3");
  EXPECT_EQ(with_pp[3], tc + "num_layers_in_last_pipeline_stage=0");
  EXPECT_EQ(layout_key_for_trainer_key(tc + "num_layers_in_first_pipeline_stage"),
            "first_stage_layers");
  EXPECT_EQ(layout_key_for_trainer_key(tc + "num_layers_in_last_pipeline_stage"),
            "last_stage_layers");
  EXPECT_EQ(layout_key_for_trainer_key("data.train_batch_size"), "");
}

TEST(TrainerSets, LastOneWinsAndWholeNumbersOnly) {
  const std::vector<std::string> sets = {"a=1", "b=x", "a=7", "c"};
  EXPECT_EQ(last_trainer_set(sets, "a"), "7");
  EXPECT_EQ(last_trainer_set(sets, "c"), std::nullopt);
  EXPECT_EQ(whole_number("42"), 42);
  EXPECT_EQ(whole_number("4.2"), std::nullopt);
  EXPECT_EQ(whole_number(""), std::nullopt);
}

}  // namespace
}  // namespace grpo::core
