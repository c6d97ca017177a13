// The plan's layout runs (label layouts): grpo-trainer processes at expert-, tensor- and
// pipeline-parallel layouts give the same per-step loss, reward and gradient norm, and the same
// final weights, as the data-parallel run with the same seed and data (within 1e-5, fp32: the only
// difference is the order of floating-point sums); checkpoints move between layouts; layouts the
// trainer does not build are refused with one line.
//
// Why a data-parallel run is the oracle: expert parallelism does not change which examples a rank
// samples and scores (data parallelism splits them either way), only where each expert's
// computation happens; tensor parallelism does not change which examples a data-parallel replica
// (a TP group) samples and scores, only where each head, FFN column and vocabulary row is
// computed. So every quantity of an EP run must equal the plain run's at the same number of
// ranks, and a TP run's the plain run's with one rank per replica (world / TP), which never
// splits a tensor or exchanges a token. Sequence parallelism and TP x EP of an MoE model change
// only where each row, head and expert is computed, so they compare with the same oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "grpo/trainer/tensor_io.h"
#include "process_helpers.h"

namespace grpo::trainer::testing {
namespace {

// 2 SFT + 3 GRPO steps of `model` whose batches divide by 4 ranks.
std::vector<std::string> base_args(const std::string& model) {
  return {"--model",     model,
          "--set",       "trainer.sft_warmup_steps=2",
          "--set",       "trainer.total_training_steps=3",
          "--set",       "trainer.sft_batch_size=8",
          "--set",       "data.train_batch_size=4",
          "--set",       "actor_rollout_ref.rollout.n=4",
          "--set",       "actor_rollout_ref.actor.ppo_mini_batch_size=4",
          "--set",       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
          "--set",       "actor_rollout_ref.actor.ppo_epochs=1",
          "--set",       "data.val_size=8",
          "--set",       "data.train_size=256",
          "--set",       "trainer.test_freq=-1",
          "--set",       "trainer.threads=1",
          "--log-level", "warn"};
}

std::vector<std::string> args_for(int ep) {
  return with(base_args("tiny-moe"),
              {"--set", "actor_rollout_ref.actor.megatron.expert_model_parallel_size=" +
                            std::to_string(ep)});
}

// tiny-dense (4 heads, 2 K/V heads, FFN 384, vocabulary 64) at TP `tp`.
std::vector<std::string> tp_args(int tp) {
  return with(base_args("tiny-dense"),
              {"--set", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" +
                            std::to_string(tp)});
}

// tiny-moe at TP `tp` x EP `ep`, with sequence parallelism when TP > 1 (Megatron-Core needs it
// for MoE with TP).
std::vector<std::string> moe_args(int tp, int ep, int etp = 1) {
  return with(
      args_for(ep),
      {"--set", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" + std::to_string(tp),
       "--set",
       "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=" + std::to_string(etp),
       "--set",
       std::string("actor_rollout_ref.actor.megatron.sequence_parallel=") +
           (tp > 1 ? "true" : "false")});
}

// Batches whose rollout rows (3 prompts x 3 samples = 9 per decoding step) do not divide by
// TP = 2: under sequence parallelism the last rank's rows end with a padding row.
std::vector<std::string> odd_rows(std::vector<std::string> args) {
  return with(std::move(args),
              {"--set", "data.train_batch_size=3", "--set", "actor_rollout_ref.rollout.n=3",
               "--set", "actor_rollout_ref.actor.ppo_mini_batch_size=3"});
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The newest committed checkpoint's model tensors.
NamedTensors final_weights(const fs::path& run_dir) {
  fs::path newest;
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints")) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step_", 0) == 0 && e.path().string() > newest.string()) newest = e.path();
  }
  auto t = from_safetensors(read_all(newest / "model.safetensors"));
  EXPECT_TRUE(t.ok()) << newest;
  return t.ok() ? std::move(t).value() : NamedTensors{};
}

void expect_near_field(const nlohmann::json& a, const nlohmann::json& b, const char* key,
                       std::int64_t step) {
  if (!a.contains(key) && !b.contains(key)) return;
  ASSERT_TRUE(a.contains(key) && b.contains(key)) << key << " at step " << step;
  EXPECT_NEAR(a[key].get<double>(), b[key].get<double>(), 1e-5) << key << " at step " << step;
}

// Per-step metrics of rank 0 (every step event carries the values reduced over all ranks).
void expect_same_steps(const RankResult& a, const RankResult& b) {
  const auto sa = a.of_type("step");
  const auto sb = b.of_type("step");
  ASSERT_EQ(sa.size(), sb.size());
  ASSERT_EQ(sa.size(), 5u);
  for (std::size_t i = 0; i < sa.size(); ++i) {
    const auto s = static_cast<std::int64_t>(i + 1);
    for (const char* k : {"sft_loss", "loss", "pg_loss", "kl", "entropy", "reward_mean",
                          "grad_norm", "aux_loss", "response_length"}) {
      expect_near_field(sa[i], sb[i], k, s);
    }
  }
}

void expect_same_weights(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first);
    ASSERT_TRUE(a[i].second.sizes().equals(b[i].second.sizes())) << a[i].first;
    const double diff = (a[i].second - b[i].second).abs().max().item<double>();
    EXPECT_LE(diff, 1e-5) << a[i].first;
  }
}

// The expert_load events of rank 0: the counts are summed over every rank, so they equal the
// plain run's whatever the layout.
void expect_same_expert_load(const RankResult& a, const RankResult& b) {
  const auto la = a.of_type("expert_load");
  const auto lb = b.of_type("expert_load");
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) {
    EXPECT_EQ(la[i]["tokens_per_expert"], lb[i]["tokens_per_expert"]) << i;
  }
}

struct EpCase {
  int world;
  int ep;
};

void PrintTo(const EpCase& c, std::ostream* os) {
  *os << "EP=" << c.ep << " on " << c.world << " ranks";
}

class ExpertParallel : public ::testing::TestWithParam<EpCase> {};

TEST_P(ExpertParallel, EqualsDataParallel) {
  const auto [world, ep] = GetParam();
  const std::string tag = std::to_string(world) + "-" + std::to_string(ep);
  const fs::path a = fresh_dir("layout-dp-" + tag);
  const fs::path b = fresh_dir("layout-ep-" + tag);
  auto ra = run_ranks(world, a, args_for(1));
  auto rb = run_ranks(world, b, args_for(ep));
  expect_all_exit(ra, 0);
  expect_all_exit(rb, 0);
  const auto layout = rb[0].of_type("layout");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0]["ep"], ep);
  EXPECT_EQ(layout[0]["dp"], world);
  EXPECT_EQ(layout[0]["edp"], world / ep);
  EXPECT_EQ(layout[0]["experts_per_rank"], 8 / ep);
  EXPECT_EQ(layout[0]["token_exchange"], "all-to-all");
  expect_same_steps(ra[0], rb[0]);
  expect_same_weights(final_weights(a), final_weights(b));
  // Tokens travel by all-to-all (Megatron's dispatcher), not the old all-gather: every rank sends
  // in every step (each holds tokens), and the EP group gathers nothing.
  for (int r = 0; r < world; ++r) {
    for (const auto& step : rb[static_cast<std::size_t>(r)].of_type("step")) {
      const auto& bytes = step["comm_bytes"];
      EXPECT_GT(bytes.value("ep.alltoall", 0), 0) << "rank " << r << ": " << bytes.dump();
      EXPECT_EQ(bytes.value("ep.allgather", 0), 0) << "rank " << r << ": " << bytes.dump();
    }
  }
  // Expert load is counted over the whole EP group: the same counts as without EP.
  expect_same_expert_load(ra[0], rb[0]);
  fs::remove_all(a);
  fs::remove_all(b);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ExpertParallel,
                         ::testing::Values(EpCase{2, 2}, EpCase{4, 4}, EpCase{4, 2}),
                         [](const auto& p) {
                           return "ep" + std::to_string(p.param.ep) + "_on_" +
                                  std::to_string(p.param.world) + "ranks";
                         });

struct TpCase {
  int world;
  int tp;
};

void PrintTo(const TpCase& c, std::ostream* os) {
  *os << "TP=" << c.tp << " on " << c.world << " ranks";
}

class TensorParallel : public ::testing::TestWithParam<TpCase> {};

TEST_P(TensorParallel, EqualsDataParallelWithOneRankPerReplica) {
  const auto [world, tp] = GetParam();
  const std::string tag = std::to_string(world) + "-" + std::to_string(tp);
  const fs::path a = fresh_dir("layout-dp-tp" + tag);
  const fs::path b = fresh_dir("layout-tp-" + tag);
  auto ra = run_ranks(world / tp, a, tp_args(1));
  auto rb = run_ranks(world, b, tp_args(tp));
  expect_all_exit(ra, 0);
  expect_all_exit(rb, 0);
  const auto layout = rb[0].of_type("layout");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0]["tp"], tp);
  EXPECT_EQ(layout[0]["dp"], world / tp);
  expect_same_steps(ra[0], rb[0]);
  // Every rank of the TP run reports the replica-reduced values of rank 0.
  for (int r = 1; r < world; ++r) expect_same_steps(rb[0], rb[static_cast<std::size_t>(r)]);
  // The tokens of a step are counted once per replica, not once per rank.
  const auto sa = ra[0].of_type("step");
  const auto sb = rb[0].of_type("step");
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].value("generated_tokens", -1), sb[i].value("generated_tokens", -1)) << i;
  }
  expect_same_weights(final_weights(a), final_weights(b));
  fs::remove_all(a);
  fs::remove_all(b);
}

// TP 2 splits the 2 K/V heads (one per rank), on its own and with DP 2.
INSTANTIATE_TEST_SUITE_P(Layouts, TensorParallel, ::testing::Values(TpCase{2, 2}, TpCase{4, 2}),
                         [](const auto& p) {
                           return "tp" + std::to_string(p.param.tp) + "_on_" +
                                  std::to_string(p.param.world) + "ranks";
                         });

// Sequence parallelism on tiny-dense at TP 2: the norms and residuals run on each rank's rows,
// the split blocks on the gathered sequence. Nothing a replica computes changes, so the run
// equals TP 2 without it and the 1-rank run (one replica either way). The rollout's rows do not
// divide by TP (odd_rows), so the padding row is exercised.
TEST(Layouts, SequenceParallelEqualsTensorParallelAndOneRank) {
  const fs::path one = fresh_dir("layout-sp-one");
  const fs::path tp = fresh_dir("layout-sp-tp");
  const fs::path sp = fresh_dir("layout-sp-sp");
  auto r1 = run_ranks(1, one, odd_rows(tp_args(1)));
  auto rt = run_ranks(2, tp, odd_rows(tp_args(2)));
  auto rs = run_ranks(2, sp,
                      odd_rows(with(tp_args(2), {"--set",
                                                 "actor_rollout_ref.actor.megatron.sequence_"
                                                 "parallel=true"})));
  expect_all_exit(r1, 0);
  expect_all_exit(rt, 0);
  expect_all_exit(rs, 0);
  const auto layout = rs[0].of_type("layout");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0]["tp"], 2);
  EXPECT_EQ(layout[0]["sequence_parallel"], true);
  EXPECT_EQ(rt[0].of_type("layout").at(0)["sequence_parallel"], false);
  expect_same_steps(r1[0], rs[0]);
  expect_same_steps(rt[0], rs[0]);
  expect_same_steps(rs[0], rs[1]);
  expect_same_weights(final_weights(one), final_weights(sp));
  expect_same_weights(final_weights(tp), final_weights(sp));
  for (const auto& d : {one, tp, sp}) fs::remove_all(d);
}

struct MoeCase {
  int world;
  int tp;
  int ep;
  int etp = 1;
};

void PrintTo(const MoeCase& c, std::ostream* os) {
  *os << "TP=" << c.tp << " x EP=" << c.ep << " x ETP=" << c.etp << " on " << c.world << " ranks";
}

class MoeTensorParallel : public ::testing::TestWithParam<MoeCase> {};

// tiny-moe at TP x EP (sequence parallelism on; experts whole, or split over TP with ETP = TP)
// equals the plain run with one rank per replica (world / TP ranks, no TP, no EP): steps, final
// weights gathered from the shards, and the expert load counted over the whole EP group.
TEST_P(MoeTensorParallel, EqualsDataParallelWithOneRankPerReplica) {
  const auto [world, tp, ep, etp] = GetParam();
  const std::string tag = std::to_string(world) + "-" + std::to_string(tp) + "-" +
                          std::to_string(ep) + "-" + std::to_string(etp);
  const fs::path a = fresh_dir("layout-moe-dp-" + tag);
  const fs::path b = fresh_dir("layout-moe-tp-" + tag);
  // With one replica the rollout's rows do not divide by TP (odd_rows): a padding row.
  auto odd = [&](std::vector<std::string> args) {
    return world == tp ? odd_rows(std::move(args)) : args;
  };
  auto ra = run_ranks(world / tp, a, odd(moe_args(1, 1)));
  auto rb = run_ranks(world, b, odd(moe_args(tp, ep, etp)));
  expect_all_exit(ra, 0);
  expect_all_exit(rb, 0);
  const auto layout = rb[0].of_type("layout");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0]["tp"], tp);
  EXPECT_EQ(layout[0]["ep"], ep);
  EXPECT_EQ(layout[0]["dp"], world / tp);
  EXPECT_EQ(layout[0]["etp"], etp);
  EXPECT_EQ(layout[0]["edp"], world / (ep * etp));
  EXPECT_EQ(layout[0]["sequence_parallel"], true);
  expect_same_steps(ra[0], rb[0]);
  for (int r = 1; r < world; ++r) expect_same_steps(rb[0], rb[static_cast<std::size_t>(r)]);
  expect_same_weights(final_weights(a), final_weights(b));
  ASSERT_FALSE(ra[0].of_type("expert_load").empty());
  expect_same_expert_load(ra[0], rb[0]);
  fs::remove_all(a);
  fs::remove_all(b);
}

// TP 2 alone (every rank runs every expert on its own rows), TP 2 x EP 2 (the EP group is the TP
// group: rank map, docs/parallelism.md), TP 2 x EP 4 (the EP group spans both replicas), and
// with ETP = TP = 2 (each expert split over the TP group, which runs it on the group's rows):
// alone, with DP 2 and with EP 2 (the EP group then spans the replicas: ranks 0 and 2).
INSTANTIATE_TEST_SUITE_P(Layouts, MoeTensorParallel,
                         ::testing::Values(MoeCase{2, 2, 1}, MoeCase{4, 2, 2}, MoeCase{4, 2, 4},
                                           MoeCase{2, 2, 1, 2}, MoeCase{4, 2, 1, 2},
                                           MoeCase{4, 2, 2, 2}),
                         [](const auto& p) {
                           return "tp" + std::to_string(p.param.tp) + "_ep" +
                                  std::to_string(p.param.ep) +
                                  (p.param.etp > 1 ? "_etp" + std::to_string(p.param.etp) : "") +
                                  "_on_" + std::to_string(p.param.world) + "ranks";
                         });

// Rollout TP = 1 under TP x EP (verl's hybrid engine): before each rollout every rank gathers the
// whole model from the shards and generates its replica's samples alone; the log-probs and the
// update run at the layout. The same oracle as the layout itself: the plain run with one rank per
// replica, which has no shards and generates with its own (whole) model.
TEST(Layouts, WholeModelRolloutEqualsDataParallel) {
  const fs::path a = fresh_dir("layout-rollout-plain");
  const fs::path b = fresh_dir("layout-rollout-whole");
  auto ra = run_ranks(2, a, moe_args(1, 1));
  auto rb = run_ranks(
      4, b,
      with(moe_args(2, 2), {"--set", "actor_rollout_ref.rollout.tensor_model_parallel_size=1"}));
  expect_all_exit(ra, 0);
  expect_all_exit(rb, 0);
  EXPECT_EQ(ra[0].of_type("layout").at(0)["rollout_layout"], "training");
  for (const auto& r : rb) {
    const auto layout = r.of_type("layout");
    ASSERT_EQ(layout.size(), 1u);
    EXPECT_EQ(layout[0]["rollout_layout"], "whole");
    // tiny-moe's 1,988,480 parameters in fp32, on every rank (bench/layouts/RESULTS.md).
    EXPECT_EQ(layout[0]["rollout_param_bytes"], 7'953'920);
    const auto steps = r.of_type("step");
    ASSERT_EQ(steps.size(), 5u);
    for (std::size_t i = 2; i < steps.size(); ++i) {
      EXPECT_TRUE(steps[i].contains("rollout_reshard_s")) << steps[i].dump();
      EXPECT_GT(steps[i]["comm_bytes"].value("world.broadcast", 0), 0) << steps[i].dump();
    }
  }
  expect_same_steps(ra[0], rb[0]);
  for (int r = 1; r < 4; ++r) expect_same_steps(rb[0], rb[static_cast<std::size_t>(r)]);
  expect_same_weights(final_weights(a), final_weights(b));
  fs::remove_all(a);
  fs::remove_all(b);
}

struct PpCase {
  std::string model;
  int world;
  int pp, tp, ep;
  int first, last;                          // num_layers_in_{first,last}_pipeline_stage (0: even)
  std::vector<std::pair<int, int>> stages;  // the decoder layers each stage trains
};

void PrintTo(const PpCase& c, std::ostream* os) {
  *os << c.model << " PP=" << c.pp << " TP=" << c.tp << " EP=" << c.ep << " on " << c.world
      << " ranks";
}

std::vector<std::string> pp_args(const PpCase& c) {
  const std::string m = "actor_rollout_ref.actor.megatron.";
  const std::string tc = m + "override_transformer_config.";
  std::vector<std::string> args = c.model == "tiny-moe" ? moe_args(c.tp, c.ep) : tp_args(c.tp);
  return with(std::move(args),
              {"--set", m + "pipeline_model_parallel_size=" + std::to_string(c.pp), "--set",
               tc + "num_layers_in_first_pipeline_stage=" + std::to_string(c.first), "--set",
               tc + "num_layers_in_last_pipeline_stage=" + std::to_string(c.last)});
}

// Mixed precision (dtype bfloat16: bf16 parameters, activations and collectives; fp32 master
// weights, gradients and gradient reduction; docs/trainer.md "Precision"). The oracle is the fp32
// run at one rank per replica. bf16 keeps 8 significant bits, so the runs agree to bf16's
// precision, not to 1e-5: measured on this machine the losses differ by at most 0.07% and the
// gradient norms by at most 5% (in GRPO steps whose gradient is mostly the aux loss and rounding);
// the bounds below are 1% and 10%. Adam moves a weight by about the learning rate per step
// whatever its gradient, so where a gradient is rounding noise the two runs move it in opposite
// directions: 5 steps with learning rates <= 2e-4 bound the weights' difference by 2e-3.
void expect_tracks_fp32(const RankResult& fp32, const RankResult& bf16) {
  const auto sa = fp32.of_type("step");
  const auto sb = bf16.of_type("step");
  ASSERT_EQ(sa.size(), 5u);
  ASSERT_EQ(sb.size(), 5u);
  for (std::size_t i = 0; i < sa.size(); ++i) {
    for (const char* k : {"sft_loss", "loss", "entropy", "aux_loss", "grad_norm"}) {
      if (!sa[i].contains(k)) continue;
      const double a = sa[i][k].get<double>();
      const double b = sb[i][k].get<double>();
      const double rel = std::string(k) == "grad_norm" ? 0.10 : 0.01;
      EXPECT_LE(std::abs(a - b), rel * std::max(std::abs(a), std::abs(b)) + 1e-4)
          << k << " at step " << i + 1 << ": fp32 " << a << ", bf16 " << b;
    }
  }
}

// The bytes a bf16 rank holds: bf16 parameters, fp32 gradients, fp32 masters + two moments
// (the planner's 2 + 4 + 12 bytes per parameter, docs/memory-model.md).
void expect_mixed_precision_bytes(const RankResult& r) {
  const auto layout = r.of_type("layout");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0]["dtype"], "bfloat16");
  const std::int64_t params = layout[0]["param_bytes"].get<std::int64_t>();
  EXPECT_EQ(layout[0]["grad_bytes"].get<std::int64_t>(), 2 * params);
  EXPECT_EQ(layout[0]["optimizer_bytes"].get<std::int64_t>(), 6 * params);
}

TEST(Layouts, MixedPrecisionTracksFp32AndResumesBitExact) {
  const std::vector<std::string> bf16 = {"--set",
                                         "actor_rollout_ref.actor.megatron.dtype=bfloat16"};
  struct Case {
    std::string tag;
    int world;
    std::vector<std::string> args;  // the bf16 layout
    int plain_world;
    std::vector<std::string> plain;  // fp32, one rank per replica
  };
  PpCase pp{"tiny-dense", 2, 2, 1, 1, 0, 0, {}};
  PpCase pp_plain{"tiny-dense", 1, 1, 1, 1, 0, 0, {}};
  const std::vector<Case> cases = {
      {"tpep", 4, with(moe_args(2, 2), bf16), 2, moe_args(1, 1)},
      {"pp", 2, with(pp_args(pp), bf16), 1, pp_args(pp_plain)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tag);
    const fs::path a = fresh_dir("layout-mixed-fp32-" + c.tag);
    const fs::path b = fresh_dir("layout-mixed-bf16-" + c.tag);
    auto ra = run_ranks(c.plain_world, a, c.plain);
    auto rb = run_ranks(c.world, b, c.args);
    expect_all_exit(ra, 0);
    expect_all_exit(rb, 0);
    for (const auto& r : rb) expect_mixed_precision_bytes(r);
    expect_tracks_fp32(ra[0], rb[0]);
    // Checkpoints hold the fp32 masters (docs/checkpoint-format.md).
    const NamedTensors wa = final_weights(a);
    const NamedTensors wb = final_weights(b);
    ASSERT_EQ(wa.size(), wb.size());
    for (std::size_t i = 0; i < wa.size(); ++i) {
      EXPECT_EQ(wb[i].second.scalar_type(), at::kFloat) << wb[i].first;
      EXPECT_LE((wa[i].second - wb[i].second).abs().max().item<double>(), 2e-3) << wb[i].first;
    }
    // Interrupted after step 3's checkpoint and resumed at the same layout: the masters, moments
    // and bf16 parameters come back exactly, so the run ends with the uninterrupted weights.
    const fs::path d = fresh_dir("layout-mixed-resume-" + c.tag);
    auto r1 =
        run_ranks(c.world, d,
                  with(c.args, {"--set", "trainer.save_freq=3", "--fault", "crash@step=4,rank=0"}));
    ASSERT_EQ(r1[0].exit_code, 6) << r1[0].stderr_text;
    auto r2 = run_ranks(c.world, d, c.args);
    expect_all_exit(r2, 0);
    EXPECT_EQ(r2[0].of_type("checkpoint_loaded").at(0)["step"], 3);
    EXPECT_EQ(r2[0].final_sha(), rb[0].final_sha());
    // The bf16 run's final checkpoint goes on in fp32 for one more step: it loads the masters
    // exactly (the SHA-256 over the loaded weights is the bf16 run's final one).
    auto r3 = run_ranks(c.world, d,
                        with(c.args, {"--set", "actor_rollout_ref.actor.megatron.dtype=float32",
                                      "--set", "trainer.total_training_steps=4"}));
    expect_all_exit(r3, 0);
    const auto loaded = r3[0].of_type("checkpoint_loaded");
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0]["step"], 5);
    EXPECT_EQ(loaded[0]["weights_sha256"], rb[0].final_sha());
    EXPECT_EQ(r3[0].of_type("layout").at(0)["dtype"], "float32");
    EXPECT_EQ(r3[0].of_type("step").size(), 1u);
    fs::remove_all(a);
    fs::remove_all(b);
    fs::remove_all(d);
  }
}

class PipelineParallel : public ::testing::TestWithParam<PpCase> {};

// Pipeline parallelism changes only where each layer is computed: the ranks of one pipeline see
// the same data (one data-parallel replica), so the run equals the plain run with one rank per
// replica (world / (PP x TP) ranks, no PP, TP or EP): steps, the final weights, expert load.
TEST_P(PipelineParallel, EqualsDataParallelWithOneRankPerReplica) {
  const PpCase c = GetParam();
  const int replicas = c.world / (c.pp * c.tp);
  const std::string tag = c.model + "-" + std::to_string(c.world) + "-" + std::to_string(c.pp) +
                          "-" + std::to_string(c.tp) + "-" + std::to_string(c.ep);
  const fs::path a = fresh_dir("layout-pp-dp-" + tag);
  const fs::path b = fresh_dir("layout-pp-" + tag);
  PpCase plain{c.model, replicas, 1, 1, 1, 0, 0, {}};
  auto ra = run_ranks(replicas, a, pp_args(plain));
  auto rb = run_ranks(c.world, b, pp_args(c));
  expect_all_exit(ra, 0);
  expect_all_exit(rb, 0);
  for (int r = 0; r < c.world; ++r) {
    const auto layout = rb[static_cast<std::size_t>(r)].of_type("layout");
    ASSERT_EQ(layout.size(), 1u);
    EXPECT_EQ(layout[0]["pp"], c.pp);
    EXPECT_EQ(layout[0]["tp"], c.tp);
    EXPECT_EQ(layout[0]["dp"], replicas);
    EXPECT_EQ(layout[0]["schedule"], "1f1b");
    EXPECT_EQ(layout[0]["stage_layers"], nlohmann::json(c.stages));
    // Megatron's rank order: PP is the outermost dimension.
    EXPECT_EQ(layout[0]["stage"], r / (c.world / c.pp));
    // Every step moves activations between the stages and shares the trained weights after.
    for (const auto& step : rb[static_cast<std::size_t>(r)].of_type("step")) {
      const auto& bytes = step["comm_bytes"];
      EXPECT_GT(bytes.value("pp.send", 0), 0) << "rank " << r << ": " << bytes.dump();
      EXPECT_GT(bytes.value("pp.broadcast", 0), 0) << "rank " << r << ": " << bytes.dump();
      EXPECT_TRUE(step.contains("reshard_s")) << step.dump();
    }
  }
  expect_same_steps(ra[0], rb[0]);
  for (int r = 1; r < c.world; ++r) expect_same_steps(rb[0], rb[static_cast<std::size_t>(r)]);
  expect_same_weights(final_weights(a), final_weights(b));
  expect_same_expert_load(ra[0], rb[0]);
  fs::remove_all(a);
  fs::remove_all(b);
}

// Uneven stages (1 + 3 layers, Megatron's num_layers_in_first_pipeline_stage), TP x PP, PP x DP
// (3 + 1), and for tiny-moe PP x EP (the EP group inside a stage) and TP x PP x EP with sequence
// parallelism.
INSTANTIATE_TEST_SUITE_P(Layouts, PipelineParallel,
                         ::testing::Values(PpCase{"tiny-dense", 2, 2, 1, 1, 1, 0, {{0, 1}, {1, 4}}},
                                           PpCase{"tiny-dense", 4, 2, 2, 1, 0, 0, {{0, 2}, {2, 4}}},
                                           PpCase{"tiny-dense", 4, 2, 1, 1, 0, 1, {{0, 3}, {3, 4}}},
                                           PpCase{"tiny-moe", 4, 2, 1, 2, 0, 0, {{0, 2}, {2, 4}}},
                                           PpCase{"tiny-moe", 4, 2, 2, 2, 1, 0, {{0, 1}, {1, 4}}}),
                         [](const auto& p) {
                           return std::string(p.param.model == "tiny-moe" ? "moe_" : "dense_") +
                                  "pp" + std::to_string(p.param.pp) + "_tp" +
                                  std::to_string(p.param.tp) + "_ep" + std::to_string(p.param.ep) +
                                  "_on_" + std::to_string(p.param.world) + "ranks";
                         });

// A checkpoint moves between layouts: `to` runs uninterrupted; `from` stops at step 4 after
// checkpointing step 3; `to` resumes from that checkpoint, written at the other layout. The
// layouts have as many data-parallel replicas, so the resumed run continues the same sampling
// streams: it loads step 3 and its steps 4 and 5 (`keys`) and final weights equal the
// uninterrupted run's within 1e-5.
struct At {
  int world;
  std::vector<std::string> args;
};

void expect_checkpoint_moves(const std::string& tag, const At& from, const At& to,
                             const std::vector<const char*>& keys) {
  const fs::path plain = fresh_dir("layout-plain-" + tag);
  const fs::path moved = fresh_dir("layout-moved-" + tag);
  auto rp = run_ranks(to.world, plain, to.args);
  expect_all_exit(rp, 0);
  auto r1 = run_ranks(
      from.world, moved,
      with(from.args, {"--set", "trainer.save_freq=3", "--fault", "exit@step=4,code=9,rank=0"}));
  ASSERT_EQ(r1[0].exit_code, 9) << r1[0].stderr_text;
  auto r2 = run_ranks(to.world, moved, to.args);
  expect_all_exit(r2, 0);
  const auto loaded = r2[0].of_type("checkpoint_loaded");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0]["step"], 3);
  EXPECT_EQ(loaded[0]["resharded"], false);
  EXPECT_NE(loaded[0]["saved_layout"], loaded[0]["layout"]);
  const auto sp = rp[0].of_type("step");
  const auto sm = r2[0].of_type("step");
  ASSERT_EQ(sp.size(), 5u);
  ASSERT_EQ(sm.size(), 2u);  // steps 4 and 5
  for (std::size_t i = 0; i < 2; ++i) {
    for (const char* k : keys) {
      expect_near_field(sp[3 + i], sm[i], k, static_cast<std::int64_t>(4 + i));
    }
  }
  expect_same_weights(final_weights(plain), final_weights(moved));
  fs::remove_all(plain);
  fs::remove_all(moved);
}

const std::vector<const char*> kResumeKeys = {"loss", "reward_mean", "grad_norm", "kl"};

// PP = 2 (uneven stages, 2 ranks) and 1 rank without PP, both ways.
TEST(Layouts, CheckpointsMoveBetweenPipelineLayouts) {
  const At pp{2, pp_args({"tiny-dense", 2, 2, 1, 1, 1, 0, {}})};
  const At one{1, pp_args({"tiny-dense", 1, 1, 1, 1, 0, 0, {}})};
  expect_checkpoint_moves("pp-2-1", pp, one, kResumeKeys);
  expect_checkpoint_moves("pp-1-2", one, pp, kResumeKeys);
}

// tiny-moe TP = 2 x EP = 2 on 4 ranks and TP = 1 on 2 ranks, both ways; TP = ETP = 2 on 2
// ranks (the experts' slices) and TP = 1 on 1 rank, both ways.
TEST(Layouts, CheckpointsMoveBetweenMoeTensorExpertLayouts) {
  const At tp_ep{4, moe_args(2, 2)};
  const At plain{2, moe_args(1, 1)};
  std::vector<const char*> keys = kResumeKeys;
  keys.push_back("aux_loss");
  expect_checkpoint_moves("moe-4-2", tp_ep, plain, keys);
  expect_checkpoint_moves("moe-2-4", plain, tp_ep, keys);
  const At etp{2, moe_args(2, 1, 2)};
  const At one{1, moe_args(1, 1)};
  expect_checkpoint_moves("moe-etp-2-1", etp, one, keys);
  expect_checkpoint_moves("moe-etp-1-2", one, etp, keys);
}

// tiny-dense TP = 2 on 2 ranks and 1 rank without TP, both ways.
TEST(Layouts, CheckpointsMoveBetweenTensorParallelLayouts) {
  const At tp{2, tp_args(2)};
  const At one{1, tp_args(1)};
  expect_checkpoint_moves("tp-2-1", tp, one, kResumeKeys);
  expect_checkpoint_moves("tp-1-2", one, tp, kResumeKeys);
}

// tiny-moe EP = 2 and EP = 1 on 2 ranks, both ways.
TEST(Layouts, CheckpointsMoveBetweenLayouts) {
  const At ep{2, args_for(2)};
  const At plain{2, args_for(1)};
  expect_checkpoint_moves("ep-2-1", ep, plain, kResumeKeys);
  expect_checkpoint_moves("ep-1-2", plain, ep, kResumeKeys);
}

// Layouts the embedded trainer does not build end the run at start-up with one line, exit 2.
TEST(Layouts, UnbuiltLayoutsAreRefusedWithOneLine) {
  const fs::path d = fresh_dir("layout-refused");
  auto r =
      run_ranks(2, d,
                with(args_for(1),
                     {"--set", "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=2"}));
  expect_all_exit(r, 2);
  EXPECT_NE(r[0].stderr_text.find("ETP=2 with TP=1 is not built: the embedded trainer splits the "
                                  "experts over the TP group (set etp=1 or etp=tp)"),
            std::string::npos)
      << r[0].stderr_text;
  // A pipeline split that leaves a stage without layers (tiny-dense has 4).
  auto split = run_ranks(
      2, d,
      with(tp_args(1),
           {"--set", "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2", "--set",
            "actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_"
            "in_first_pipeline_stage=4"}));
  expect_all_exit(split, 2);
  EXPECT_NE(split[0].stderr_text.find("PP=2 with first/last stage layers 4/0 does not split the 4 "
                                      "layers"),
            std::string::npos)
      << split[0].stderr_text;
  // TP for an MoE model without sequence parallelism (Megatron-Core refuses it too).
  auto moe_tp =
      run_ranks(2, d,
                with(args_for(1),
                     {"--set", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"}));
  expect_all_exit(moe_tp, 2);
  EXPECT_NE(
      moe_tp[0].stderr_text.find("TP=2 with the MoE model tiny-moe needs sequence parallelism"),
      std::string::npos)
      << moe_tp[0].stderr_text;
  // TP 4 exceeds tiny-dense's 2 K/V heads (Megatron-Core would replicate them; not built).
  auto kv = run_ranks(4, d, tp_args(4));
  expect_all_exit(kv, 2);
  EXPECT_NE(kv[0].stderr_text.find("TP=4 does not split tiny-dense"), std::string::npos)
      << kv[0].stderr_text;
  auto dense = run_ranks(
      2, d,
      {"--model", "tiny-dense", "--set",
       "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2", "--log-level", "warn"});
  expect_all_exit(dense, 2);
  EXPECT_NE(dense[0].stderr_text.find("EP=2 needs a mixture-of-experts model"), std::string::npos)
      << dense[0].stderr_text;
  fs::remove_all(d);
}

}  // namespace
}  // namespace grpo::trainer::testing
