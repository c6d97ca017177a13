#include <gtest/gtest.h>

#include <map>

#include "allocation_peak.h"
#include "grpo/core/model_spec.h"
#include "grpo/trainer/model.h"
#include "ref_ops.h"
#include "test_specs.h"

namespace grpo::trainer {
namespace {

std::int64_t numel_of(const QwenModel& m) {
  std::int64_t n = 0;
  for (const auto& [name, p] : m.named_params()) n += p.numel();
  return n;
}

using testing::ref_ops;

TEST(Model, TinySpecsHaveExactlyThePlannedParameters) {
  for (const core::ModelSpec& spec : {testing::tiny_dense(), testing::tiny_moe()}) {
    auto gen = compat::make_cpu_generator(1);
    QwenModel m(spec, ref_ops(), at::TensorOptions().dtype(at::kFloat), &gen);
    EXPECT_EQ(numel_of(m), core::count_params(spec).total()) << spec.name;
  }
}

TEST(Model, BigSpecsOnTheMetaDeviceMatchTheCountsWithoutAllocating) {
  for (const core::ModelSpec& spec :
       {testing::qwen3_30b_moe(), testing::qwen25_7b(), testing::qwen15_moe()}) {
    QwenModel m(spec, ref_ops(), at::TensorOptions().dtype(at::kFloat).device(at::kMeta), nullptr);
    const core::ParamCounts c = core::count_params(spec);
    EXPECT_EQ(numel_of(m), c.total()) << spec.name;
    // Per layer, by part.
    std::int64_t attn = 0, mlp = 0, norms = 0;
    for (const auto& [name, p] : m.named_params()) {
      if (name.rfind("model.layers.0.", 0) != 0) continue;
      if (name.find("self_attn.") != std::string::npos) {
        attn += p.numel();
      } else if (name.find(".mlp.") != std::string::npos) {
        mlp += p.numel();
      } else {
        norms += p.numel();
      }
    }
    EXPECT_EQ(attn, core::attention_params_per_layer(spec)) << spec.name;
    EXPECT_EQ(mlp, spec.is_moe() ? core::moe_params_per_layer(spec)
                                 : core::swiglu_params(spec.hidden_size, spec.ffn_hidden_size))
        << spec.name;
    EXPECT_EQ(norms, 2 * spec.hidden_size) << spec.name;
  }
}

// Megatron's split of Qwen2.5-7B (config.json: 28 heads, 4 K/V heads, head_dim 128, FFN 18944,
// vocabulary 152064, untied) at TP 4, by hand: each rank holds 7 query heads (896 rows of q_proj,
// 896 columns of o_proj), one K/V head (128 rows), 4736 FFN columns and 38016 vocabulary rows.
TEST(TensorParallel, SlicesFollowMegatronByHand) {
  const core::ModelSpec spec = testing::qwen25_7b();
  const auto q = tp_slice(spec, "model.layers.3.self_attn.q_proj.weight", 2, 4, false);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->dim, 0);
  EXPECT_EQ(q->offset, 2 * 896);
  EXPECT_EQ(q->length, 896);
  const auto qb = tp_slice(spec, "model.layers.3.self_attn.q_proj.bias", 2, 4, false);
  EXPECT_EQ(qb->offset, 2 * 896);
  const auto k = tp_slice(spec, "model.layers.3.self_attn.k_proj.weight", 3, 4, false);
  EXPECT_EQ(k->offset, 3 * 128);
  EXPECT_EQ(k->length, 128);
  const auto o = tp_slice(spec, "model.layers.0.self_attn.o_proj.weight", 1, 4, false);
  EXPECT_EQ(o->dim, 1);
  EXPECT_EQ(o->offset, 896);
  const auto down = tp_slice(spec, "model.layers.0.mlp.down_proj.weight", 3, 4, false);
  EXPECT_EQ(down->dim, 1);
  EXPECT_EQ(down->offset, 3 * 4736);
  EXPECT_EQ(down->length, 4736);
  const auto up = tp_slice(spec, "exp_avg.model.layers.0.mlp.up_proj.weight", 1, 4, false);
  EXPECT_EQ(up->dim, 0);
  EXPECT_EQ(up->offset, 4736);
  EXPECT_EQ(tp_slice(spec, "lm_head.weight", 1, 4, false)->offset, 38016);
  EXPECT_EQ(tp_slice(spec, "model.embed_tokens.weight", 3, 4, false)->length, 38016);
  // Replicated: norms; nothing is split at TP 1.
  EXPECT_FALSE(tp_slice(spec, "model.layers.0.input_layernorm.weight", 1, 4, false).has_value());
  EXPECT_FALSE(tp_slice(spec, "model.norm.weight", 1, 4, false).has_value());
  EXPECT_FALSE(tp_slice(spec, "lm_head.weight", 0, 1, false).has_value());
  // Qwen3-30B-A3B (32 heads, 4 K/V heads, head_dim 128) at TP 8, more ranks than K/V heads:
  // ranks 2r and 2r+1 hold K/V head r.
  const core::ModelSpec moe = testing::qwen3_30b_moe();
  EXPECT_EQ(tp_slice(moe, "model.layers.0.self_attn.v_proj.weight", 5, 8, false)->offset, 2 * 128);
  EXPECT_EQ(tp_slice(moe, "model.layers.0.self_attn.v_proj.weight", 5, 8, false)->length, 128);
  // Its experts, the router and the q/k norms stay whole.
  EXPECT_FALSE(
      tp_slice(moe, "model.layers.0.mlp.experts.7.up_proj.weight", 0, 2, false).has_value());
  EXPECT_FALSE(tp_slice(moe, "model.layers.0.mlp.gate.weight", 0, 2, false).has_value());
  EXPECT_FALSE(tp_slice(moe, "model.layers.0.self_attn.q_norm.weight", 0, 2, false).has_value());
}

// The modules a TP rank builds have exactly the slices tp_slice names and its sharding plan places
// there (meta device: nothing is allocated), and the slices of the TP group tile every split
// tensor.
TEST(TensorParallel, ShardedModulesHoldTheirSlices) {
  // Qwen2.5-7B at TP 2 and 4; Qwen3-8B's shape (32 heads, 8 K/V heads) at TP 16 replicates K/V.
  core::ModelSpec qwen3_8b = testing::qwen25_7b();
  qwen3_8b.num_attention_heads = 32;
  qwen3_8b.num_kv_heads = 8;
  qwen3_8b.hidden_size = 4096;
  qwen3_8b.ffn_hidden_size = 12288;
  qwen3_8b.vocab_size = 151936;
  for (const auto& [spec, size] : {std::pair{testing::qwen25_7b(), 2},
                                   std::pair{testing::qwen25_7b(), 4}, std::pair{qwen3_8b, 16}}) {
    const auto meta = at::TensorOptions().dtype(at::kFloat).device(at::kMeta);
    const QwenModel whole(spec, ref_ops(), meta, nullptr);
    std::map<std::string, std::vector<std::int64_t>> full;
    std::int64_t kv_params = 0;
    for (const auto& [name, p] : whole.named_params()) {
      full[name] = p.sizes().vec();
      if (name.find("k_proj") != std::string::npos || name.find("v_proj") != std::string::npos) {
        kv_params += p.numel();
      }
    }
    {
      std::int64_t total = 0;
      for (int rank = 0; rank < size; ++rank) {
        const QwenModel part(spec, ref_ops(), meta, nullptr, {}, TensorShard{rank, size, nullptr});
        ShardLayout layout;
        layout.tp_rank = rank;
        layout.tp_size = size;
        const ShardingPlan plan(spec, QwenModel::whole_shapes(spec, ref_ops()), layout);
        ASSERT_EQ(plan.params().size(), part.named_params().size());
        for (const auto& [name, p] : part.named_params()) {
          const Placement* where = plan.find(name);
          ASSERT_NE(where, nullptr) << name;
          std::vector<std::int64_t> want = full.at(name);
          if (const auto s = tp_slice(spec, name, rank, size, false)) {
            want[static_cast<std::size_t>(s->dim)] = s->length;
            total += p.numel();
          } else if (rank == 0) {
            total += p.numel();
          }
          EXPECT_EQ(p.sizes().vec(), want) << name << " rank " << rank << " of " << size;
          // The module built for this rank holds exactly what the run's plan says it holds.
          EXPECT_EQ(p.sizes().vec(), where->own_shape()) << name << " rank " << rank;
        }
      }
      // Replicated K/V heads count once per rank holding them (TP / KV times).
      const std::int64_t copies = std::max<std::int64_t>(1, size / spec.num_kv_heads);
      EXPECT_EQ(total, core::count_params(spec).total() + (copies - 1) * kv_params)
          << "TP " << size;
    }
  }
}

// Expert tensor parallelism (ETP = TP): Qwen3-30B-A3B's routed experts (FFN 768) are split like a
// dense MLP (gate/up by output rows, down by input columns) and the TP group's ranks together hold
// each expert once; without it the experts stay whole.
TEST(TensorParallel, ExpertTensorParallelSplitsTheExperts) {
  const core::ModelSpec moe = testing::qwen3_30b_moe();
  const std::string expert = "model.layers.5.mlp.experts.100.";
  const auto up = tp_slice(moe, expert + "up_proj.weight", 1, 2, true);
  ASSERT_TRUE(up.has_value());
  EXPECT_EQ(up->dim, 0);
  EXPECT_EQ(up->offset, 384);
  EXPECT_EQ(up->length, 384);
  const auto down = tp_slice(moe, "exp_avg." + expert + "down_proj.weight", 1, 2, true);
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->dim, 1);
  EXPECT_EQ(down->offset, 384);
  EXPECT_FALSE(tp_slice(moe, "model.layers.5.mlp.gate.weight", 1, 2, true).has_value());

  const core::ModelSpec spec = testing::tiny_moe();
  const auto meta = at::TensorOptions().dtype(at::kFloat).device(at::kMeta);
  const QwenModel whole(spec, ref_ops(), meta, nullptr);
  std::map<std::string, std::vector<std::int64_t>> full;
  for (const auto& [name, p] : whole.named_params()) full[name] = p.sizes().vec();
  std::int64_t experts = 0;
  for (int rank = 0; rank < 2; ++rank) {
    ExpertShard shard;
    shard.tensor_parallel = true;
    const QwenModel part(spec, ref_ops(), meta, nullptr, shard, TensorShard{rank, 2, nullptr});
    for (const auto& [name, p] : part.named_params()) {
      if (name.find(".mlp.experts.") == std::string::npos) continue;
      std::vector<std::int64_t> want = full.at(name);
      const auto s = tp_slice(spec, name, rank, 2, true);
      ASSERT_TRUE(s.has_value()) << name;
      want[static_cast<std::size_t>(s->dim)] = spec.moe_ffn_hidden_size / 2;
      EXPECT_EQ(p.sizes().vec(), want) << name << " rank " << rank;
      experts += p.numel();
    }
  }
  // 3 matrices of hidden x FFN per expert per MoE layer, once over the group.
  EXPECT_EQ(experts,
            spec.moe_layers() * spec.num_experts * 3 * spec.hidden_size * spec.moe_ffn_hidden_size);
}

TEST(Model, ParameterNamesFollowHuggingFace) {
  auto gen = compat::make_cpu_generator(1);
  QwenModel m(testing::tiny_moe(), ref_ops(), at::TensorOptions(), &gen);
  std::set<std::string> names;
  for (const auto& [name, p] : m.named_params()) names.insert(name);
  for (const char* expected :
       {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.q_norm.weight", "model.layers.3.mlp.gate.weight",
        "model.layers.3.mlp.experts.7.down_proj.weight",
        "model.layers.1.mlp.shared_expert.up_proj.weight",
        "model.layers.1.mlp.shared_expert_gate.weight", "model.layers.2.input_layernorm.weight",
        "model.layers.2.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }
}

// Decoding token by token with the KV cache gives the same hidden states as one full forward,
// also with left padding.
TEST(Model, KvCacheMatchesFullForward) {
  for (const core::ModelSpec& spec : {testing::tiny_dense(), testing::tiny_moe()}) {
    auto gen = compat::make_cpu_generator(7);
    QwenModel m(spec, ref_ops(), at::TensorOptions(), &gen);
    torch::NoGradGuard no_grad;
    const std::int64_t b = 3, t = 9;
    at::Tensor tokens = at::randint(3, spec.vocab_size, {b, t}, gen, at::kLong);
    at::Tensor valid = at::ones({b, t}, at::kBool);
    valid[1].narrow(0, 0, 2).fill_(false);  // row 1 left-padded by 2
    at::Tensor positions = (valid.to(at::kLong).cumsum(1) - 1).clamp_min(0);
    ModelOutput full = m.forward(tokens, positions, valid, valid, nullptr);

    KvCache cache = m.make_cache(b, t);
    const std::int64_t prefill = 4;
    ModelOutput first = m.forward(tokens.narrow(1, 0, prefill), positions.narrow(1, 0, prefill),
                                  valid.narrow(1, 0, prefill), valid.narrow(1, 0, prefill), &cache);
    std::vector<at::Tensor> parts{first.hidden};
    for (std::int64_t i = prefill; i < t; ++i) {
      ModelOutput step = m.forward(tokens.narrow(1, i, 1), positions.narrow(1, i, 1),
                                   valid.narrow(1, 0, i + 1), valid.narrow(1, i, 1), &cache);
      parts.push_back(step.hidden);
    }
    at::Tensor inc = at::cat(parts, 1);
    // Compare the real tokens only (padding queries attend to nothing meaningful).
    at::Tensor diff = (inc - full.hidden).abs().masked_select(valid.unsqueeze(-1));
    EXPECT_LT(diff.max().item<double>(), 1e-4) << spec.name;
  }
}

// A left-padded sequence gives the same last hidden state as the unpadded one.
TEST(Model, LeftPaddingDoesNotChangeTheResult) {
  auto gen = compat::make_cpu_generator(3);
  QwenModel m(testing::tiny_dense(), ref_ops(), at::TensorOptions(), &gen);
  torch::NoGradGuard no_grad;
  at::Tensor seq = at::randint(3, 64, {1, 6}, gen, at::kLong);
  at::Tensor v1 = at::ones({1, 6}, at::kBool);
  at::Tensor p1 = at::arange(6, at::kLong).unsqueeze(0);
  at::Tensor h1 = m.forward(seq, p1, v1, v1, nullptr).hidden;
  at::Tensor padded = at::cat({at::zeros({1, 3}, at::kLong), seq}, 1);
  at::Tensor v2 = at::cat({at::zeros({1, 3}, at::kBool), at::ones({1, 6}, at::kBool)}, 1);
  at::Tensor p2 = (v2.to(at::kLong).cumsum(1) - 1).clamp_min(0);
  at::Tensor h2 = m.forward(padded, p2, v2, v2, nullptr).hidden;
  EXPECT_LT((h2.narrow(1, 3, 6) - h1).abs().max().item<double>(), 1e-5);
}

TEST(Model, MoeAuxLossAndExpertLoad) {
  auto gen = compat::make_cpu_generator(5);
  core::ModelSpec spec = testing::tiny_moe();
  QwenModel m(spec, ref_ops(), at::TensorOptions(), &gen);
  at::Tensor tokens = at::randint(3, 64, {2, 5}, gen, at::kLong);
  at::Tensor valid = at::ones({2, 5}, at::kBool);
  at::Tensor pos = at::arange(5, at::kLong).unsqueeze(0).expand({2, 5});
  m.set_collect_expert_load(true);
  ModelOutput out = m.forward(tokens, pos, valid, valid, nullptr);
  // Balanced routing gives aux = top_k per layer; it is close to that at init.
  const double aux = out.aux_loss.item<double>();
  EXPECT_GT(aux, 0.5 * static_cast<double>(spec.num_layers * spec.experts_per_token));
  out.aux_loss.backward();
  auto load = m.take_expert_load();
  ASSERT_EQ(load.size(), 4u);
  for (const ExpertLoad& l : load) {
    std::int64_t sum = 0;
    for (std::int64_t c : l.tokens_per_expert) sum += c;
    EXPECT_EQ(sum, 10 * spec.experts_per_token);
  }
  EXPECT_TRUE(m.take_expert_load()[0].tokens_per_expert[0] == 0);
}

// AllocationPeak against sizes by hand: 1 MiB of floats, freed, then 256 KiB and 512 KiB alive
// together: the peak is the larger of 1 MiB and 768 KiB; tensors made before the stretch and
// freed inside it do not count; a second stretch starts from zero again.
TEST(AllocationPeak, CountsTheLargestTotalHeldInsideTheStretch) {
  at::Tensor before = at::ones({1 << 20}, at::kFloat);  // 4 MiB, allocated outside
  std::int64_t first = 0;
  {
    AllocationPeak peak;
    {
      at::Tensor a = at::empty({1 << 18}, at::kFloat);  // 1 MiB
    }
    at::Tensor b = at::empty({1 << 16}, at::kFloat);  // 256 KiB
    at::Tensor c = at::empty({1 << 17}, at::kFloat);  // 512 KiB
    before = at::Tensor();                            // the 4 MiB block is freed inside the stretch
    first = peak.peak();
  }
  EXPECT_EQ(first, std::int64_t{1} << 20);
  AllocationPeak again;
  at::Tensor d = at::empty({1 << 15}, at::kFloat);  // 128 KiB
  EXPECT_EQ(again.peak(), std::int64_t{1} << 17);
}

}  // namespace
}  // namespace grpo::trainer
