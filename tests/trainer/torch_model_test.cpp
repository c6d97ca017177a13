#include <gtest/gtest.h>

#include "grpo/core/model_spec.h"
#include "grpo/trainer/model.h"
#include "test_specs.h"

namespace grpo::trainer {
namespace {

std::int64_t numel_of(const QwenModel& m) {
  std::int64_t n = 0;
  for (const auto& [name, p] : m.named_params()) n += p.numel();
  return n;
}

const kernels::Ops& ref_ops() {
  return kernels::ops_for(kernels::Backend::kReference);
}

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

}  // namespace
}  // namespace grpo::trainer
