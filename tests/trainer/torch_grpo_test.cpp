// GRPO pieces against hand computations and LibTorch's own implementations: advantages, the
// policy loss (values and gradients), KL estimators, AdamW vs torch::optim::AdamW, sampling,
// generation with and without the KV cache, safetensors round trips, gradient reduction.
#include <gtest/gtest.h>

#include <cmath>

#include "grpo/trainer/grpo.h"
#include "grpo/trainer/rollout.h"
#include "grpo/trainer/tasks.h"
#include "grpo/trainer/tensor_io.h"
#include "ref_ops.h"
#include "test_specs.h"

namespace grpo::trainer {
namespace {

using testing::ref_ops;

TEST(Grpo, GroupAdvantagesNormalizeWithinEachGroup) {
  at::Tensor r = at::tensor({1.f, 0.f, 0.f, 1.f, 1.f, 1.f, 1.f, 1.f});
  at::Tensor a = group_advantages(r, 4, true);
  // Group 1: mean 0.5, unbiased std sqrt(1/3).
  const double s = std::sqrt(1.0 / 3.0);
  EXPECT_NEAR(a[0].item<double>(), 0.5 / (s + 1e-6), 1e-5);
  EXPECT_NEAR(a[1].item<double>(), -0.5 / (s + 1e-6), 1e-5);
  // Group 2: all equal -> 0.
  EXPECT_EQ(a.narrow(0, 4, 4).abs().max().item<double>(), 0.0);
  at::Tensor c = group_advantages(r, 4, false);
  EXPECT_NEAR(c[0].item<double>(), 0.5, 1e-6);
  EXPECT_EQ(group_advantages(r, 1, true).abs().sum().item<double>(), 0.0);
}

TEST(Grpo, KlEstimatorsMatchVerl) {
  at::Tensor lp = at::tensor({-1.0, -2.0, -0.5}, at::kDouble);
  at::Tensor ref = at::tensor({-1.5, -1.0, -0.5}, at::kDouble);
  at::Tensor k3 = kernels::kl_penalty(lp, ref, kernels::KlType::kLowVarKl);
  for (int i = 0; i < 3; ++i) {
    const double kl = ref[i].item<double>() - lp[i].item<double>();
    EXPECT_NEAR(k3[i].item<double>(), std::exp(kl) - kl - 1.0, 1e-12);
  }
  at::Tensor big =
      kernels::kl_penalty(at::tensor({-30.0}), at::tensor({0.0}), kernels::KlType::kLowVarKl);
  EXPECT_DOUBLE_EQ(big.item<double>(), 10.0);  // clamped
  EXPECT_NEAR(kernels::kl_penalty(lp, ref, kernels::KlType::kMse)[1].item<double>(), 0.5, 1e-12);
}

TEST(Grpo, PolicyLossMatchesAHandComputationAndItsGradient) {
  torch::manual_seed(0);
  const std::int64_t n = 5, h = 6, v = 7;
  at::Tensor hidden = (0.3 * at::randn({n, h}, at::kDouble)).requires_grad_(true);
  at::Tensor w = at::randn({v, h}, at::kDouble).requires_grad_(true);
  kernels::PolicyLossInputs in;
  in.tokens = at::tensor({0, 3, 6, 2, 2}, at::kLong);
  in.old_logprobs = at::randn({n}, at::kDouble) * 0.1 - 2.0;
  in.ref_logprobs = at::randn({n}, at::kDouble) * 0.1 - 2.0;
  in.advantages = at::tensor({1.0, -1.0, 0.5, -2.0, 0.0}, at::kDouble);
  kernels::PolicyLossParams p;
  p.clip_ratio_low = 0.2;
  p.clip_ratio_high = 0.28;
  p.kl_loss_coef = 0.1;
  p.entropy_coeff = 0.01;
  p.temperature = 0.7;
  auto out = ref_ops().policy_loss(hidden, w, in, p);

  // By hand, per token.
  at::Tensor logits = hidden.matmul(w.t()) / 0.7;
  at::Tensor logp = at::log_softmax(logits, -1).gather(1, in.tokens.unsqueeze(1)).squeeze(1);
  double pg = 0, kl = 0, ent = 0, clipped = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double ratio = std::exp(logp[i].item<double>() - in.old_logprobs[i].item<double>());
    const double adv = in.advantages[i].item<double>();
    const double l1 = -adv * ratio;
    const double l2 = -adv * std::clamp(ratio, 0.8, 1.28);
    double l = std::max(l1, l2);
    if (adv < 0) l = std::min(l, -adv * 3.0);
    pg += l / n;
    clipped += (l2 > l1 ? 1.0 : 0.0) / n;
    const double d =
        std::clamp(in.ref_logprobs[i].item<double>() - logp[i].item<double>(), -20.0, 20.0);
    kl += std::clamp(std::exp(d) - d - 1.0, -10.0, 10.0) / n;
    at::Tensor prob = at::softmax(logits[i], -1);
    ent += -(prob * at::log_softmax(logits[i], -1)).sum().item<double>() / n;
  }
  EXPECT_NEAR(out.pg_loss.item<double>(), pg, 1e-10);
  EXPECT_NEAR(out.kl.item<double>(), kl, 1e-10);
  EXPECT_NEAR(out.entropy.item<double>(), ent, 1e-10);
  EXPECT_NEAR(out.clip_frac.item<double>(), clipped, 1e-12);
  EXPECT_NEAR(out.loss.item<double>(), pg + 0.1 * kl - 0.01 * ent, 1e-10);

  // Gradient against a finite difference along a random direction.
  out.loss.backward();
  at::Tensor dir = at::randn_like(hidden);
  const double eps = 1e-6;
  auto loss_at = [&](const at::Tensor& hh) {
    torch::NoGradGuard ng;
    return ref_ops().policy_loss(hh, w, in, p).loss.item<double>();
  };
  const double fd =
      (loss_at(hidden.detach() + eps * dir) - loss_at(hidden.detach() - eps * dir)) / (2 * eps);
  EXPECT_NEAR((hidden.grad() * dir).sum().item<double>(), fd, 1e-6);
}

TEST(Grpo, RouterTopKRenormalizesAndCounts) {
  at::Tensor logits = torch::tensor({{3.f, 1.f, 0.f, 2.f}, {0.f, 0.f, 5.f, 0.f}});
  auto r = ref_ops().route(logits, 2, true);
  EXPECT_EQ(r.indices[0][0].item<std::int64_t>(), 0);
  EXPECT_EQ(r.indices[0][1].item<std::int64_t>(), 3);
  EXPECT_NEAR(r.weights.sum(-1)[0].item<double>(), 1.0, 1e-6);
  EXPECT_EQ(r.tokens_per_expert.sum().item<std::int64_t>(), 4);
  EXPECT_EQ(r.tokens_per_expert[2].item<std::int64_t>(), 1);
  auto raw = ref_ops().route(logits, 2, false);
  EXPECT_LT(raw.weights.sum(-1)[0].item<double>(), 1.0);
}

TEST(Grpo, AdamWMatchesTorchOptimAdamW) {
  torch::manual_seed(1);
  at::Tensor a = at::randn({4, 3}).requires_grad_(true);
  at::Tensor b = a.detach().clone().requires_grad_(true);
  AdamW mine({{"p", a}});
  torch::optim::AdamW theirs({b}, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  for (int step = 0; step < 5; ++step) {
    at::Tensor g = at::randn({4, 3});
    a.mutable_grad() = g.clone();
    b.mutable_grad() = g.clone();
    AdamWOptions o;
    o.lr = 1e-2;
    o.weight_decay = 0.1;
    mine.step(o);
    theirs.step();
  }
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-6);
  EXPECT_EQ(mine.steps(), 5);
  // State round trip through safetensors.
  NamedTensors st = from_safetensors(to_safetensors(mine.state())).value();
  AdamW other({{"p", a.detach().clone()}});
  ASSERT_TRUE(other.load_state(st, mine.steps()).ok());
  EXPECT_TRUE(other.state()[0].second.equal(mine.state()[0].second));
}

// Mixed precision: a bf16 parameter with an fp32 master. Two backward passes (micro batches)
// add their bf16 gradients into the fp32 main gradient; the master then follows
// torch::optim::AdamW run on an fp32 copy with the sum of the same gradients, and the parameter
// is the master rounded to bf16.
TEST(Grpo, MixedPrecisionAdamWUpdatesFp32MastersAndRoundsTheParameters) {
  torch::manual_seed(2);
  const at::Tensor init = at::randn({4, 3});
  at::Tensor p = init.to(at::kBFloat16).requires_grad_(true);
  at::Tensor b = init.clone().requires_grad_(true);
  AdamW mine({{"p", p}}, {init.clone()});
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().scalar_type(), at::kFloat);
  torch::optim::AdamW theirs({b}, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  for (int step = 0; step < 5; ++step) {
    // d/dp sum(p * c) = c, exact in bf16; 1 + 2^-12 is not a bf16 number, so the sum of the two
    // micro batches' gradients is exact only if it is kept in fp32.
    const at::Tensor c1 = at::randn({4, 3}).to(at::kBFloat16);
    const at::Tensor c2 = at::full({4, 3}, 1.0 / 4096.0).to(at::kBFloat16);
    (p * c1).sum().backward();
    (p * c2).sum().backward();
    EXPECT_EQ(p.grad().scalar_type(), at::kFloat);
    const at::Tensor want = c1.to(at::kFloat) + c2.to(at::kFloat);
    EXPECT_TRUE(p.grad().equal(want)) << "step " << step;
    b.mutable_grad() = want.clone();
    AdamWOptions o;
    o.lr = 1e-2;
    o.weight_decay = 0.1;
    mine.step(o);
    theirs.step();
    mine.zero_grad();
    EXPECT_EQ(p.grad().abs().max().item<double>(), 0.0);
  }
  const at::Tensor master = mine.weights()[0].second;
  EXPECT_EQ(master.scalar_type(), at::kFloat);
  EXPECT_LT((master - b).abs().max().item<double>(), 1e-6);
  EXPECT_TRUE(p.detach().equal(master.to(at::kBFloat16)));
  EXPECT_EQ(mine.master_bytes(), 4 * 3 * 4);
  // The moments are fp32 too: the state a checkpoint holds.
  for (const auto& [name, t] : mine.state()) EXPECT_EQ(t.scalar_type(), at::kFloat) << name;
}

TEST(Grpo, SafetensorsRoundTripAndCorruptionIsAnError) {
  NamedTensors t = {{"a", at::arange(6, at::kFloat).view({2, 3})},
                    {"b", at::tensor({1, 2, 3}, at::kLong)},
                    {"c", at::tensor({7}, at::kByte)}};
  const std::string bytes = to_safetensors(t, {{"k", "v"}});
  auto back = from_safetensors(bytes);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].first, "a");
  EXPECT_TRUE((*back)[0].second.equal(t[0].second));
  EXPECT_TRUE((*back)[1].second.equal(t[1].second));
  EXPECT_EQ(tensors_sha256(*back), tensors_sha256(t));
  EXPECT_FALSE(from_safetensors(bytes.substr(0, bytes.size() - 3)).ok());
  EXPECT_FALSE(from_safetensors("xx").ok());
}

TEST(Rollout, TopPAndTopKRestrictTheSupport) {
  at::Generator gen = compat::make_cpu_generator(3);
  at::Tensor logits =
      at::log(torch::tensor({{0.5f, 0.3f, 0.15f, 0.05f}})).expand({2000, 4}).contiguous();
  SamplingParams p;
  p.top_p = 0.7;  // keeps {0, 1}
  at::Tensor s = sample_next(logits, p, gen);
  EXPECT_EQ((s >= 2).sum().item<std::int64_t>(), 0);
  EXPECT_GT((s == 1).sum().item<std::int64_t>(), 500);
  SamplingParams k;
  k.top_k = 1;
  EXPECT_EQ(sample_next(logits, k, gen).max().item<std::int64_t>(), 0);
  SamplingParams g;
  g.greedy = true;
  EXPECT_EQ(sample_next(logits, g, gen).max().item<std::int64_t>(), 0);
}

TEST(Rollout, KvCacheAndFullRecomputeGenerateTheSameGreedyTokens) {
  for (const core::ModelSpec& spec : {testing::tiny_dense(), testing::tiny_moe()}) {
    at::Generator init = compat::make_cpu_generator(11);
    QwenModel m(spec, ref_ops(), at::TensorOptions(), &init);
    PromptBatch pb = make_prompt_batch({{1, 5, 6, 40}, {1, 7}, {1, 8, 9}});
    SamplingParams g;
    g.greedy = true;
    at::Generator gen = compat::make_cpu_generator(1);
    Generation a = generate(m, pb, 6, g, gen, true);
    Generation b = generate(m, pb, 6, g, gen, false);
    EXPECT_TRUE(a.tokens.equal(b.tokens)) << spec.name;
    EXPECT_TRUE(a.valid.equal(b.valid)) << spec.name;
    // Sampling is reproducible from the generator state.
    SamplingParams s;
    at::Generator g1 = compat::make_cpu_generator(5), g2 = compat::make_cpu_generator(5);
    EXPECT_TRUE(
        generate(m, pb, 6, s, g1, true).tokens.equal(generate(m, pb, 6, s, g2, true).tokens));
  }
}

// max_num_seqs: rows generated in batches of 2 get the greedy tokens of one batch of all rows
// (each batch left-pads to its own longest prompt; the masked slots add nothing), and the
// joined responses are padded to the longest batch's.
TEST(Rollout, GeneratingInBatchesGivesTheSameGreedyTokens) {
  at::Generator init = compat::make_cpu_generator(11);
  QwenModel m(testing::tiny_dense(), ref_ops(), at::TensorOptions(), &init);
  const std::vector<std::vector<std::int64_t>> prompts = {
      {1, 5, 6, 40}, {1, 7}, {1, 8, 9}, {1, 9, 9, 9, 9, 3}, {1, 4}};
  SamplingParams g;
  g.greedy = true;
  at::Generator gen = compat::make_cpu_generator(1);
  const Generation all = generate(m, make_prompt_batch(prompts), 6, g, gen, true);
  const Generation batched = generate_in_batches(m, prompts, 2, 6, g, gen, true);
  EXPECT_TRUE(batched.tokens.equal(all.tokens));
  EXPECT_TRUE(batched.valid.equal(all.valid));
  EXPECT_EQ(batched.generated_tokens, all.generated_tokens);
  // Sampling draws the batches in order from one generator: reproducible from its state.
  SamplingParams s;
  at::Generator g1 = compat::make_cpu_generator(5), g2 = compat::make_cpu_generator(5);
  EXPECT_TRUE(generate_in_batches(m, prompts, 2, 6, s, g1, true)
                  .tokens.equal(generate_in_batches(m, prompts, 2, 6, s, g2, true).tokens));
}

TEST(Rollout, ResponsesStopAtEosAndArePaddedAfter) {
  at::Generator init = compat::make_cpu_generator(2);
  QwenModel m(testing::tiny_dense(), ref_ops(), at::TensorOptions(), &init);
  std::vector<std::vector<std::int64_t>> prompts(64, std::vector<std::int64_t>{1, 5, 6});
  SamplingParams s;
  s.temperature = 3.0;  // near-uniform: <eos> shows up in some rows
  at::Generator gen = compat::make_cpu_generator(1);
  Generation out = generate(m, make_prompt_batch(prompts), 12, s, gen, true);
  int stopped = 0;
  for (std::int64_t r = 0; r < 64; ++r) {
    bool after_eos = false;
    for (std::int64_t t = 0; t < out.tokens.size(1); ++t) {
      const auto tok = out.tokens[r][t].item<std::int64_t>();
      const bool valid = out.valid[r][t].item<bool>();
      if (after_eos) {
        EXPECT_EQ(tok, Tokenizer::kPad);
        EXPECT_FALSE(valid);
      } else {
        EXPECT_TRUE(valid);
      }
      if (tok == Tokenizer::kEos && !after_eos) {
        after_eos = true;
        ++stopped;
      }
    }
  }
  EXPECT_GT(stopped, 0);
  EXPECT_EQ(out.generated_tokens, out.valid.sum().item<std::int64_t>());
}

TEST(Grpo, SequenceLayoutPredictsResponseTokensFromThePreviousSlot) {
  at::Tensor prompt = torch::tensor({{0, 1, 5}, {1, 6, 7}}, at::kLong);
  at::Tensor pv = prompt != 0;
  at::Tensor resp = torch::tensor({{9, 2}, {2, 0}}, at::kLong);
  at::Tensor rv = torch::tensor({{true, true}, {true, false}});
  SequenceBatch b = make_sequence_batch(prompt, pv, resp, rv);
  EXPECT_EQ(b.positions[0][3].item<std::int64_t>(), 2);  // after 2 real prompt tokens
  EXPECT_EQ(b.positions[1][3].item<std::int64_t>(), 3);
  at::Generator init = compat::make_cpu_generator(2);
  QwenModel m(testing::tiny_dense(), ref_ops(), at::TensorOptions(), &init);
  ResponseStates s = response_states(m, b);
  EXPECT_EQ(s.tokens.numel(), 3);
  EXPECT_EQ(s.tokens[2].item<std::int64_t>(), 2);
  std::vector<std::int64_t> done;  // the heartbeat hook: rows done after each micro batch
  at::Tensor lp = sequence_logprobs(m, b, 1, 1.0, [&](std::int64_t rows) { done.push_back(rows); });
  EXPECT_EQ(done, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(lp[1][1].item<double>(), 0.0);  // padding slot
  // Same as computing the full logits by hand for row 0, slot 3 (predicts token 9).
  torch::NoGradGuard ng;
  ModelOutput o = m.forward(b.tokens, b.positions, b.valid, b.valid, nullptr);
  at::Tensor ref = at::log_softmax(m.logits(o.hidden[0][2]), -1)[9];
  EXPECT_NEAR(lp[0][0].item<double>(), ref.item<double>(), 1e-5);
}

TEST(Grpo, ReduceAndClipOnOneRank) {
  at::Tensor p = at::zeros({3}).requires_grad_(true);
  p.mutable_grad() = at::tensor({3.f, 4.f, 0.f});
  at::Tensor q = at::zeros({2}).requires_grad_(true);  // no gradient: becomes zeros
  auto comm = make_single_process_communicator();
  auto norm = reduce_and_clip_gradients({{"p", p}, {"q", q}}, *comm, 1 << 20, 1.0);
  ASSERT_TRUE(norm.ok());
  EXPECT_NEAR(*norm, 5.0, 1e-6);
  EXPECT_NEAR(p.grad().norm().item<double>(), 1.0, 1e-5);
  EXPECT_TRUE(q.grad().defined());
}

}  // namespace
}  // namespace grpo::trainer
