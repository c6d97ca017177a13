// The fused kernels (kernels = "fused") against the plain LibTorch reference on random inputs:
// values and gradients of RMSNorm, the router (with its counts and permutation), the token
// log-probs and the GRPO policy loss, in fp32 (relative error <= 1e-5) and bf16 (<= 1e-2), at odd
// and edge sizes, with chunk sizes shrunk so that partial token chunks and vocabulary blocks occur.
//
// The reference runs in fp64 on the same input values (the fused op's fp32/bf16 inputs, widened):
// the reference in fp32 is itself ~1e-5 off where the loss terms cancel, and in bf16 it rounds
// every logit and is ~1e-2 off, so comparing with it in the same dtype would measure the
// reference's rounding, not the fused kernel's (docs/kernels.md, "Testing").
//
// Every CPU allocation is poisoned (filled with 0xFF bytes: NaN for floats, -1 for integers) while
// a test runs, so an output element a kernel forgets to write shows up as a mismatch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "grpo/kernels/fused.h"
#include "grpo/kernels/ops.h"

namespace grpo::kernels {
namespace {

// Wraps the CPU allocator and fills every new block with 0xFF.
class PoisonAllocator final : public c10::Allocator {
 public:
  explicit PoisonAllocator(c10::Allocator* inner) : inner_(inner) {}
  c10::DataPtr allocate(std::size_t n) const override {
    c10::DataPtr p = inner_->allocate(n);
    if (n > 0) std::memset(p.get(), 0xFF, n);
    return p;
  }
  c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }

 private:
  c10::Allocator* inner_;
};

class PoisonGuard {
 public:
  PoisonGuard() : previous_(c10::GetCPUAllocator()), poison_(previous_) {
    c10::SetCPUAllocator(&poison_, kPriority);
  }
  ~PoisonGuard() { c10::SetCPUAllocator(previous_, kPriority); }
  PoisonGuard(const PoisonGuard&) = delete;
  PoisonGuard& operator=(const PoisonGuard&) = delete;

 private:
  static constexpr std::uint8_t kPriority = 200;
  c10::Allocator* previous_;
  PoisonAllocator poison_;
};

class FusedKernels : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(7); }
  PoisonGuard poison_;
};

// ||a - b|| / ||b|| in fp64 (NaN when a has NaNs).
double rel_err(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.detach().to(at::kDouble);
  const at::Tensor y = b.detach().to(at::kDouble);
  const double den = std::max(y.norm().item<double>(), 1e-30);
  return (x - y).norm().item<double>() / den;
}

#define EXPECT_CLOSE(a, b, tol, what)                                    \
  do {                                                                   \
    const double err_ = rel_err((a), (b));                               \
    EXPECT_TRUE(err_ <= (tol)) << (what) << ": relative error " << err_; \
  } while (0)

// A scalar that is a sum of terms of both signs: its error is relative to the size of the terms
// (scale), not to the sum, which may cancel to nearly 0.
#define EXPECT_SUM_CLOSE(a, b, scale, tol, what)                                            \
  do {                                                                                      \
    const double want_ = (b).item<double>();                                                \
    const double err_ =                                                                     \
        std::abs((a).item<double>() - want_) / std::max({std::abs(want_), (scale), 1e-30}); \
    EXPECT_TRUE(err_ <= (tol)) << (what) << ": error relative to the terms " << err_;       \
  } while (0)

const Ops& reference() {
  return ops_for(Backend::kReference);
}

// Small chunks: partial token chunks and vocabulary blocks everywhere.
FusedOptions small_chunks() {
  FusedOptions o;
  o.vocab_block = 96;
  o.block_bytes = 13 * 96 * 4;  // 13 rows per block-wise chunk
  o.grad_chunk_bytes = 1;       // 1 row per chunk unless capped
  o.max_token_chunk = 0;
  return o;
}

FusedOptions medium_chunks() {
  FusedOptions o;
  o.vocab_block = 256;
  o.block_bytes = 16 * 256 * 4;
  o.grad_chunk_bytes = 20 * 1000 * 4;  // 16 rows for V = 1000
  return o;
}

// The same values as two independent leaves: fp64 for the reference, the test's dtype for the
// fused op.
struct Leaf {
  at::Tensor ref;
  at::Tensor fused;
};

Leaf leaf(const at::Tensor& values) {
  return {values.detach().to(at::kDouble).requires_grad_(true),
          values.detach().clone().requires_grad_(true)};
}

// ---- RMSNorm ----

void check_rms_norm(std::vector<std::int64_t> shape, at::ScalarType type, double tol) {
  const std::int64_t d = shape.back();
  auto ops = make_fused_ops();
  Leaf x = leaf(at::randn(shape).to(type));
  Leaf w = leaf((1.0 + 0.1 * at::randn({d})).to(type));
  at::Tensor yr = reference().rms_norm(x.ref, w.ref, 1e-6);
  at::Tensor yf = ops->rms_norm(x.fused, w.fused, 1e-6);
  ASSERT_EQ(yf.sizes(), yr.sizes());
  ASSERT_EQ(yf.scalar_type(), type);
  const std::string what =
      "rms_norm " + std::string(c10::toString(type)) + " d=" + std::to_string(d);
  EXPECT_CLOSE(yf, yr, tol, what + " y");
  at::Tensor dy = at::randn(shape).to(type);
  (yr * dy.to(at::kDouble)).sum().backward();
  (yf * dy).sum().backward();
  EXPECT_CLOSE(x.fused.grad(), x.ref.grad(), tol, what + " dx");
  EXPECT_CLOSE(w.fused.grad(), w.ref.grad(), tol, what + " dw");
  // Without autograd (the rollout): the same values.
  torch::NoGradGuard no_grad;
  EXPECT_CLOSE(ops->rms_norm(x.fused, w.fused, 1e-6), yr, tol, what + " y (no grad)");
}

TEST_F(FusedKernels, RmsNormMatchesReference) {
  for (auto shape : std::vector<std::vector<std::int64_t>>{{1, 7}, {3, 5, 33}, {64, 128}}) {
    check_rms_norm(shape, at::kFloat, 1e-5);
    check_rms_norm(shape, at::kBFloat16, 1e-2);
  }
}

// ---- router ----

at::ScalarType f_dtype_check(const RouterOutput& r) {
  return r.probs.scalar_type();
}

void check_router(const at::Tensor& logits_values, std::int64_t k, bool norm, bool with_valid,
                  double tol, const std::string& what) {
  auto ops = make_fused_ops();
  const std::int64_t n = logits_values.size(0);
  const std::int64_t e = logits_values.size(1);
  Leaf z = leaf(logits_values);
  at::Tensor valid = with_valid ? at::rand({n}) < 0.7 : at::Tensor();
  RouterOutput r = reference().route(z.ref, k, norm, valid);
  ASSERT_EQ(f_dtype_check(ops->route(z.fused.detach(), k, norm, valid)), at::kFloat);
  RouterOutput f = ops->route(z.fused, k, norm, valid);
  EXPECT_CLOSE(f.probs, r.probs, tol, what + " probs");
  EXPECT_CLOSE(f.weights, r.weights, tol, what + " weights");
  EXPECT_TRUE(f.indices.equal(r.indices)) << what << " indices";
  EXPECT_TRUE(f.tokens_per_expert.equal(r.tokens_per_expert)) << what << " counts";
  EXPECT_TRUE(f.expert_offsets.equal(r.expert_offsets)) << what << " offsets";
  EXPECT_TRUE(f.sorted_tokens.equal(r.sorted_tokens)) << what << " sorted tokens";
  EXPECT_TRUE(f.sorted_pairs.equal(r.sorted_pairs)) << what << " sorted pairs";
  EXPECT_EQ(f.expert_offsets[e].item<std::int64_t>(), n * k);
  at::Tensor gp = at::randn({n, e});
  at::Tensor gw = at::randn({n, k});
  ((r.probs * gp.to(at::kDouble)).sum() + (r.weights * gw.to(at::kDouble)).sum()).backward();
  ((f.probs * gp).sum() + (f.weights * gw).sum()).backward();
  EXPECT_CLOSE(z.fused.grad(), z.ref.grad(), tol, what + " d(logits)");
}

TEST_F(FusedKernels, RouterMatchesReference) {
  struct Case {
    std::int64_t n, e, k;
  };
  for (const Case c : {Case{1, 8, 2}, Case{257, 8, 2}, Case{100, 60, 4}, Case{33, 5, 5}}) {
    for (bool norm : {true, false}) {
      const std::string what = "route n=" + std::to_string(c.n) + " e=" + std::to_string(c.e) +
                               " k=" + std::to_string(c.k) + (norm ? " norm" : "");
      check_router(at::randn({c.n, c.e}), c.k, norm, c.n > 1, 1e-5, what);
    }
  }
}

TEST_F(FusedKernels, RouterSendsEveryTokenToOneExpert) {
  // Expert 3 dominates every token: with k = 1 all pairs go to it; with k = 2 it is every
  // token's first choice. Other experts get no tokens with k = 1. (A margin of 10, not 40: with
  // p = 1 - 1e-17 every gradient is ~1e-17, below fp32 resolution, and no relative error means
  // anything.)
  at::Tensor z = at::randn({50, 8});
  z.select(1, 3).add_(10.0);
  check_router(z, 1, true, true, 1e-5, "one expert k=1");
  check_router(z, 2, false, false, 1e-5, "one expert k=2");
  RouterOutput f = make_fused_ops()->route(z, 1, true);
  EXPECT_EQ(f.tokens_per_expert[3].item<std::int64_t>(), 50);
  EXPECT_EQ(f.tokens_per_expert.sum().item<std::int64_t>(), 50);
  EXPECT_EQ(f.expert_offsets[3].item<std::int64_t>(), 0);
  EXPECT_EQ(f.expert_offsets[4].item<std::int64_t>(), 50);
  EXPECT_TRUE(f.sorted_tokens.equal(at::arange(50, at::kLong)));
}

TEST_F(FusedKernels, RouterBf16LogitsMatchReference) {
  check_router(at::randn({77, 8}).to(at::kBFloat16), 2, true, true, 1e-2, "route bf16");
}

// ---- token log-probs ----

struct LogprobCase {
  std::int64_t n, h, v;
  double temperature;
};

void check_logprobs(const LogprobCase& c, const FusedOptions& opt, at::ScalarType type,
                    double tol) {
  auto ops = make_fused_ops(opt);
  const std::string what = "logprobs n=" + std::to_string(c.n) + " v=" + std::to_string(c.v) + " " +
                           std::string(c10::toString(type));
  Leaf h = leaf(at::randn({c.n, c.h}).to(type));
  Leaf w = leaf((at::randn({c.v, c.h}) / std::sqrt(static_cast<double>(c.h)) * 3.0).to(type));
  at::Tensor tokens = at::randint(c.v, {c.n}, at::kLong);
  TokenLogProbs r = reference().token_logprobs(h.ref, w.ref, tokens, c.temperature, true);
  TokenLogProbs f = ops->token_logprobs(h.fused, w.fused, tokens, c.temperature, true);
  EXPECT_CLOSE(f.logprobs, r.logprobs, tol, what + " logprobs");
  EXPECT_CLOSE(f.entropy, r.entropy, tol, what + " entropy");
  at::Tensor g1 = at::randn({c.n});
  at::Tensor g2 = at::randn({c.n});
  ((r.logprobs * g1.to(at::kDouble)).sum() + (r.entropy * g2.to(at::kDouble)).sum()).backward();
  ((f.logprobs * g1).sum() + (f.entropy * g2).sum()).backward();
  EXPECT_CLOSE(h.fused.grad(), h.ref.grad(), tol, what + " d(hidden)");
  EXPECT_CLOSE(w.fused.grad(), w.ref.grad(), tol, what + " d(lm_head)");
  // Log-probs alone (the SFT loss): only the log-prob output is used.
  h.fused.mutable_grad() = at::Tensor();
  h.ref.mutable_grad() = at::Tensor();
  reference().token_logprobs(h.ref, w.ref, tokens, c.temperature, false).logprobs.mean().backward();
  ops->token_logprobs(h.fused, w.fused, tokens, c.temperature, false).logprobs.mean().backward();
  EXPECT_CLOSE(h.fused.grad(), h.ref.grad(), tol, what + " d(hidden) of mean log-prob");
  torch::NoGradGuard no_grad;
  EXPECT_CLOSE(ops->token_logprobs(h.fused, w.fused, tokens, c.temperature, false).logprobs,
               r.logprobs, tol, what + " logprobs (no grad)");
}

TEST_F(FusedKernels, TokenLogprobsMatchReference) {
  for (const LogprobCase& c : {LogprobCase{1, 16, 37, 1.0}, LogprobCase{37, 24, 1000, 0.7},
                               LogprobCase{64, 32, 64, 1.0}}) {
    check_logprobs(c, small_chunks(), at::kFloat, 1e-5);
    check_logprobs(c, medium_chunks(), at::kFloat, 1e-5);
    check_logprobs(c, FusedOptions{}, at::kFloat, 1e-5);
  }
  check_logprobs(LogprobCase{37, 24, 1000, 0.7}, small_chunks(), at::kBFloat16, 1e-2);
}

// ---- GRPO policy loss ----

struct LossCase {
  std::int64_t n, h, v;
  KlType kl;
  double entropy_coeff;
  double temperature;
  bool use_kl = true;
};

void check_policy_loss(const LossCase& c, const FusedOptions& opt, at::ScalarType type,
                       double tol) {
  auto ops = make_fused_ops(opt);
  const std::string what = "policy_loss n=" + std::to_string(c.n) + " v=" + std::to_string(c.v) +
                           " kl=" + std::to_string(static_cast<int>(c.kl)) +
                           " ent=" + std::to_string(c.entropy_coeff) + " " +
                           std::string(c10::toString(type));
  Leaf h = leaf(at::randn({c.n, c.h}).to(type));
  Leaf w = leaf((at::randn({c.v, c.h}) / std::sqrt(static_cast<double>(c.h)) * 3.0).to(type));
  PolicyLossInputs in;
  in.tokens = at::randint(c.v, {c.n}, at::kLong);
  at::Tensor lp64;
  {
    torch::NoGradGuard no_grad;
    lp64 = reference().token_logprobs(h.ref, w.ref, in.tokens, c.temperature, false).logprobs;
  }
  const at::Tensor lp = lp64.to(at::kFloat);
  // Ratios spread around 1 (both clip branches, and the dual clip, occur); advantages of both
  // signs, some exactly 0. The reference policy sits 0.5 nats below on average, so that no KL
  // estimate is a sum cancelling to ~0 (whose relative error would mean nothing).
  in.old_logprobs = lp + 0.4 * at::randn({c.n});
  in.ref_logprobs = lp - 0.5 + 0.3 * at::randn({c.n});
  in.advantages = at::randn({c.n}) * (at::rand({c.n}) > 0.1).to(at::kFloat);
  PolicyLossParams p;
  p.clip_ratio_low = 0.2;
  p.clip_ratio_high = 0.28;
  p.clip_ratio_c = 3.0;
  p.use_kl_loss = c.use_kl;
  p.kl_type = c.kl;
  p.kl_loss_coef = 0.05;
  p.entropy_coeff = c.entropy_coeff;
  p.temperature = c.temperature;

  PolicyLossOutputs r = reference().policy_loss(h.ref, w.ref, in, p);
  PolicyLossOutputs f = ops->policy_loss(h.fused, w.fused, in, p);
  // The mean size of each term.
  const double pg_scale =
      (in.advantages.to(at::kDouble).abs() * (lp64 - in.old_logprobs).exp()).mean().item<double>();
  const double kl_scale =
      c.use_kl ? kl_penalty(lp64, in.ref_logprobs, c.kl).abs().mean().item<double>() : 0.0;
  const double loss_scale =
      pg_scale + p.kl_loss_coef * kl_scale + c.entropy_coeff * std::abs(r.entropy.item<double>());
  EXPECT_SUM_CLOSE(f.loss, r.loss, loss_scale, tol, what + " loss");
  EXPECT_SUM_CLOSE(f.pg_loss, r.pg_loss, pg_scale, tol, what + " pg_loss");
  EXPECT_SUM_CLOSE(f.kl, r.kl, kl_scale, tol, what + " kl");
  EXPECT_CLOSE(f.entropy, r.entropy, tol, what + " entropy");
  EXPECT_NEAR(f.clip_frac.item<double>(), r.clip_frac.item<double>(),
              1.5 / static_cast<double>(c.n))
      << what;
  // A gradient other than 1 flows in, as in the trainer's gradient accumulation.
  (r.loss * 0.37).backward();
  (f.loss * 0.37).backward();
  EXPECT_CLOSE(h.fused.grad(), h.ref.grad(), tol, what + " d(hidden)");
  EXPECT_CLOSE(w.fused.grad(), w.ref.grad(), tol, what + " d(lm_head)");
  // Without autograd (no gradients computed): the same values.
  torch::NoGradGuard no_grad;
  PolicyLossOutputs g = ops->policy_loss(h.fused, w.fused, in, p);
  EXPECT_SUM_CLOSE(g.loss, r.loss, loss_scale, tol, what + " loss (no grad)");
  EXPECT_CLOSE(g.entropy, r.entropy, tol, what + " entropy (no grad)");
}

TEST_F(FusedKernels, PolicyLossMatchesReferenceForEveryKlType) {
  for (KlType kl : {KlType::kLowVarKl, KlType::kKl, KlType::kAbs, KlType::kMse}) {
    check_policy_loss(LossCase{37, 24, 1000, kl, 0.0, 1.0}, small_chunks(), at::kFloat, 1e-5);
  }
  check_policy_loss(LossCase{37, 24, 1000, KlType::kLowVarKl, 0.01, 0.7}, medium_chunks(),
                    at::kFloat, 1e-5);
  check_policy_loss(LossCase{37, 24, 1000, KlType::kLowVarKl, 0.0, 1.0, false}, FusedOptions{},
                    at::kFloat, 1e-5);
}

TEST_F(FusedKernels, PolicyLossAtEdgeSizes) {
  // One token; a vocabulary smaller than a block; many tokens in one chunk.
  check_policy_loss(LossCase{1, 16, 37, KlType::kLowVarKl, 0.01, 1.0}, small_chunks(), at::kFloat,
                    1e-5);
  check_policy_loss(LossCase{1, 16, 37, KlType::kLowVarKl, 0.0, 1.0}, FusedOptions{}, at::kFloat,
                    1e-5);
  check_policy_loss(LossCase{300, 32, 64, KlType::kLowVarKl, 0.01, 1.0}, FusedOptions{}, at::kFloat,
                    1e-5);
}

TEST_F(FusedKernels, PolicyLossBf16MatchesReference) {
  check_policy_loss(LossCase{37, 24, 1000, KlType::kLowVarKl, 0.01, 1.0}, small_chunks(),
                    at::kBFloat16, 1e-2);
}

TEST_F(FusedKernels, Fp64IsHandedToTheReference) {
  auto ops = make_fused_ops();
  at::Tensor h = at::randn({5, 6}, at::kDouble);
  at::Tensor w = at::randn({7, 6}, at::kDouble);
  at::Tensor t = at::randint(7, {5}, at::kLong);
  EXPECT_TRUE(ops->token_logprobs(h, w, t, 1.0, false)
                  .logprobs.equal(reference().token_logprobs(h, w, t, 1.0, false).logprobs));
}

TEST_F(FusedKernels, PoisonGuardFillsNewTensors) {
  EXPECT_TRUE(at::empty({4}).isnan().all().item<bool>());
  EXPECT_EQ(at::empty({2}, at::kLong).sum().item<std::int64_t>(), -2);
}

TEST_F(FusedKernels, BackendNamesParse) {
  EXPECT_EQ(parse_backend("fused").value(), Backend::kFused);
  EXPECT_EQ(parse_backend("reference").value(), Backend::kReference);
  EXPECT_EQ(to_string(Backend::kFused), "fused");
  EXPECT_FALSE(parse_backend("cuda").ok());
  EXPECT_EQ(ops_for(Backend::kFused).backend(), Backend::kFused);
}

}  // namespace
}  // namespace grpo::kernels
