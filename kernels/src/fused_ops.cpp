// The fused backend: torch::autograd::Functions around the fused kernels of one device
// (fused_device.h), so the trainer's autograd graph runs through them. Algorithms, chunk sizes and
// numerics: docs/kernels.md.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "cpu/fused_logprob.h"
#include "cpu/fused_rms_norm.h"
#include "cpu/fused_router.h"
#include "fused_device.h"
#include "grpo/kernels/fused.h"
#include "ops_registry.h"

namespace grpo::kernels {
namespace fused {

const DeviceKernels& cpu_kernels() {
  static const DeviceKernels kernels{
      "cpu",
      &cpu::logprob_forward,
      &cpu::logprob_backward,
      &cpu::policy_sums,
      &cpu::policy_loss_eager,
      &cpu::rms_norm_forward,
      &cpu::rms_norm_backward,
      &cpu::route_forward,
      &cpu::route_backward,
  };
  return kernels;
}

}  // namespace fused

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

const fused::DeviceKernels& kernels_for(const at::Tensor& t) {
  if (t.is_cpu()) return fused::cpu_kernels();
  const fused::DeviceKernels* cuda = t.is_cuda() ? fused::cuda_kernels() : nullptr;
  TORCH_CHECK(cuda != nullptr, "kernels = \"fused\": no fused kernels for device ", t.device(),
              " in this build (CUDA tensors need -DGRPO_ENABLE_CUDA=ON and a LibTorch with CUDA; "
              "see docs/kernels.md)");
  return *cuda;
}

const Ops& reference() {
  return ops_for(Backend::kReference);
}

bool is_fp64(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble;
}

bool grad_needed(const at::Tensor& a, const at::Tensor& b) {
  return at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
}

at::Tensor cast_to(const at::Tensor& t, at::ScalarType type) {
  return t.defined() ? t.to(type) : t;
}

// Saved options of the block-wise paths (IValues hold no structs).
void save_options(AutogradContext* ctx, const FusedOptions& o) {
  ctx->saved_data["grad_chunk_bytes"] = o.grad_chunk_bytes;
  ctx->saved_data["vocab_block"] = o.vocab_block;
  ctx->saved_data["block_bytes"] = o.block_bytes;
  ctx->saved_data["max_token_chunk"] = o.max_token_chunk;
}

FusedOptions load_options(AutogradContext* ctx) {
  FusedOptions o;
  o.grad_chunk_bytes = ctx->saved_data["grad_chunk_bytes"].toInt();
  o.vocab_block = ctx->saved_data["vocab_block"].toInt();
  o.block_bytes = ctx->saved_data["block_bytes"].toInt();
  o.max_token_chunk = ctx->saved_data["max_token_chunk"].toInt();
  return o;
}

at::ScalarType saved_type(AutogradContext* ctx, const std::string& key) {
  return static_cast<at::ScalarType>(ctx->saved_data[key].toInt());
}

// ---- RMSNorm ----

class RmsNormFn : public torch::autograd::Function<RmsNormFn> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                               double eps) {
    const at::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    const at::Tensor w = weight.contiguous();
    fused::RmsNormForward r = kernels_for(x).rms_norm_forward(x2, w, eps);
    ctx->save_for_backward({x2, w});
    ctx->saved_data["rstd"] = r.rstd;
    ctx->saved_data["sizes"] = x.sizes().vec();
    return {r.y.view(x.sizes())};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x2 = saved[0];
    const at::Tensor& w = saved[1];
    const at::Tensor dy = grads[0].reshape({-1, x2.size(1)});
    fused::RmsNormGrads g =
        kernels_for(x2).rms_norm_backward(dy, x2, w, ctx->saved_data["rstd"].toTensor(),
                                          ctx->needs_input_grad(0), ctx->needs_input_grad(1));
    at::Tensor gx = g.x.defined() ? g.x.view(ctx->saved_data["sizes"].toIntVector()) : g.x;
    return {gx, g.weight, at::Tensor()};
  }
};

// ---- router ----

struct RouterArgs {
  std::int64_t top_k = 1;
  bool norm_topk_prob = true;
  at::Tensor valid;
  RouterOutput* out = nullptr;
};

void fill_router_output(const fused::RouterForward& r, RouterOutput* out) {
  out->indices = r.indices;
  out->tokens_per_expert = r.tokens_per_expert;
  out->expert_offsets = r.expert_offsets;
  out->sorted_tokens = r.sorted_tokens;
  out->sorted_pairs = r.sorted_pairs;
}

class RouterFn : public torch::autograd::Function<RouterFn> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& logits,
                               const RouterArgs* args) {
    fused::RouterForward r = kernels_for(logits).route_forward(
        logits.to(at::kFloat).contiguous(), args->top_k, args->norm_topk_prob, args->valid);
    fill_router_output(r, args->out);
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({r.probs, r.weights});
    ctx->saved_data["indices"] = r.indices;
    ctx->saved_data["topk_sums"] = r.topk_sums;
    ctx->saved_data["norm"] = args->norm_topk_prob;
    ctx->saved_data["dtype"] = static_cast<std::int64_t>(logits.scalar_type());
    return {r.probs, r.weights};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    fused::RouterForward r;
    r.probs = saved[0];
    r.weights = saved[1];
    r.indices = ctx->saved_data["indices"].toTensor();
    r.topk_sums = ctx->saved_data["topk_sums"].toTensor();
    at::Tensor g = kernels_for(r.probs).route_backward(r, grads[0], grads[1],
                                                       ctx->saved_data["norm"].toBool());
    return {g.to(saved_type(ctx, "dtype")), at::Tensor()};
  }
};

// ---- token log-probs ----

struct LogprobArgs {
  double temperature = 1.0;
  bool with_entropy = false;
  FusedOptions options;
};

class TokenLogprobsFn : public torch::autograd::Function<TokenLogprobsFn> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden,
                               const at::Tensor& weight, const at::Tensor& tokens,
                               const LogprobArgs* args) {
    fused::LogprobStats st = kernels_for(hidden).logprob_forward(hidden, weight, tokens,
                                                                 args->temperature, args->options);
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({hidden, weight, st.entropy});
    ctx->saved_data["tokens"] = tokens;
    ctx->saved_data["lse"] = st.lse;
    ctx->saved_data["temperature"] = args->temperature;
    ctx->saved_data["with_entropy"] = args->with_entropy;
    save_options(ctx, args->options);
    if (args->with_entropy) return {st.logprobs, st.entropy};
    return {st.logprobs};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& hidden = saved[0];
    const at::Tensor& weight = saved[1];
    fused::LogprobStats st;
    st.entropy = saved[2];
    st.lse = ctx->saved_data["lse"].toTensor();
    const bool with_entropy = ctx->saved_data["with_entropy"].toBool();
    fused::Grads g = kernels_for(hidden).logprob_backward(
        hidden, weight, ctx->saved_data["tokens"].toTensor(),
        ctx->saved_data["temperature"].toDouble(), st, grads[0],
        with_entropy ? grads[1] : at::Tensor(), ctx->needs_input_grad(0), ctx->needs_input_grad(1),
        load_options(ctx));
    return {cast_to(g.hidden, hidden.scalar_type()), cast_to(g.weight, weight.scalar_type()),
            at::Tensor(), at::Tensor()};
  }
};

// ---- GRPO policy loss ----

struct PolicyArgs {
  at::Tensor tokens;
  fused::PolicyTokens per_token;
  math::PolicyScalars scalars;
  double temperature = 1.0;
  FusedOptions options;
  bool need_hidden = false;
  bool need_weight = false;
  fused::PolicySums* sums = nullptr;
};

double loss_value(const fused::PolicySums& s, const math::PolicyScalars& p) {
  double loss = s.pg * p.inv_n;
  if (p.use_kl) loss += p.kl_coef * s.kl * p.inv_n;
  if (p.entropy_coeff != 0.0) loss -= p.entropy_coeff * s.entropy * p.inv_n;
  return loss;
}

// The loss is a scalar, so its gradients are computed in the forward (in the same pass over the
// logits) and kept here; backward only scales them by the incoming gradient.
class PolicyLossFn : public torch::autograd::Function<PolicyLossFn> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden,
                               const at::Tensor& weight, const PolicyArgs* args) {
    fused::EagerPolicy r = kernels_for(hidden).policy_loss_eager(
        hidden, weight, args->tokens, args->per_token, args->scalars, args->temperature,
        args->need_hidden, args->need_weight, args->options);
    *args->sums = r.sums;
    if (r.grads.hidden.defined()) ctx->saved_data["grad_hidden"] = r.grads.hidden;
    if (r.grads.weight.defined()) ctx->saved_data["grad_weight"] = r.grads.weight;
    ctx->saved_data["hidden_dtype"] = static_cast<std::int64_t>(hidden.scalar_type());
    ctx->saved_data["weight_dtype"] = static_cast<std::int64_t>(weight.scalar_type());
    return {
        at::scalar_tensor(loss_value(r.sums, args->scalars), hidden.options().dtype(at::kFloat))};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TORCH_CHECK(ctx->saved_data.count("hidden_dtype") == 1,
                "kernels = \"fused\": the policy loss's backward ran twice (retain_graph is not "
                "supported: its gradients are handed over, not copied)");
    // Take the gradients out of the context so that autograd can adopt them without a copy.
    const at::Tensor gh = take(ctx, "grad_hidden");
    const at::Tensor gw = take(ctx, "grad_weight");
    const at::ScalarType hidden_type = saved_type(ctx, "hidden_dtype");
    const at::ScalarType weight_type = saved_type(ctx, "weight_dtype");
    ctx->saved_data.clear();
    const double scale = grads[0].item<double>();
    for (const at::Tensor& t : {gh, gw}) {
      if (t.defined() && scale != 1.0) t.mul_(scale);
    }
    return {cast_to(gh, hidden_type), cast_to(gw, weight_type), at::Tensor()};
  }

 private:
  static at::Tensor take(AutogradContext* ctx, const std::string& key) {
    auto it = ctx->saved_data.find(key);
    if (it == ctx->saved_data.end()) return at::Tensor();
    at::Tensor t = std::move(it->second).toTensor();
    ctx->saved_data.erase(it);
    return t;
  }
};

class FusedOps final : public Ops {
 public:
  explicit FusedOps(const FusedOptions& options) : options_(options) {}

  Backend backend() const override { return Backend::kFused; }
  using Ops::route;

  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) const override {
    const at::ScalarType t = x.scalar_type();
    const bool supported = t == weight.scalar_type() &&
                           (t == at::kFloat || t == at::kBFloat16 || t == at::kHalf) &&
                           x.numel() > 0 && x.device() == weight.device();
    if (!supported) return reference().rms_norm(x, weight, eps);
    if (grad_needed(x, weight)) return RmsNormFn::apply(x, weight, eps)[0];
    const at::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    return kernels_for(x).rms_norm_forward(x2, weight.contiguous(), eps).y.view(x.sizes());
  }

  RouterOutput route(const at::Tensor& router_logits, std::int64_t top_k, bool norm_topk_prob,
                     const at::Tensor& valid) const override {
    if (is_fp64(router_logits) || router_logits.size(0) == 0) {
      return reference().route(router_logits, top_k, norm_topk_prob, valid);
    }
    RouterOutput out;
    RouterArgs args;
    args.top_k = top_k;
    args.norm_topk_prob = norm_topk_prob;
    args.valid = valid;
    args.out = &out;
    if (at::GradMode::is_enabled() && router_logits.requires_grad()) {
      variable_list r = RouterFn::apply(router_logits, &args);
      out.probs = r[0];
      out.weights = r[1];
      return out;
    }
    fused::RouterForward r =
        kernels_for(router_logits)
            .route_forward(router_logits.to(at::kFloat).contiguous(), top_k, norm_topk_prob, valid);
    fill_router_output(r, &out);
    out.probs = r.probs;
    out.weights = r.weights;
    return out;
  }

  TokenLogProbs token_logprobs(const at::Tensor& hidden, const at::Tensor& lm_head,
                               const at::Tensor& tokens, double temperature,
                               bool with_entropy) const override {
    if (is_fp64(hidden) || is_fp64(lm_head) || hidden.size(0) == 0) {
      return reference().token_logprobs(hidden, lm_head, tokens, temperature, with_entropy);
    }
    const at::Tensor tok = tokens.to(at::kLong).contiguous();
    TokenLogProbs out;
    if (grad_needed(hidden, lm_head)) {
      LogprobArgs args{temperature, with_entropy, options_};
      variable_list r = TokenLogprobsFn::apply(hidden, lm_head, tok, &args);
      out.logprobs = r[0];
      if (with_entropy) out.entropy = r[1];
      return out;
    }
    fused::LogprobStats st =
        kernels_for(hidden).logprob_forward(hidden, lm_head, tok, temperature, options_);
    out.logprobs = st.logprobs;
    if (with_entropy) out.entropy = st.entropy;
    return out;
  }

  PolicyLossOutputs policy_loss(const at::Tensor& hidden, const at::Tensor& lm_head,
                                const PolicyLossInputs& in,
                                const PolicyLossParams& p) const override {
    const std::int64_t n = hidden.size(0);
    if (is_fp64(hidden) || is_fp64(lm_head) || n == 0) {
      return reference().policy_loss(hidden, lm_head, in, p);
    }
    const auto fp32 = [&](const at::Tensor& t) {
      return t.detach().to(hidden.device(), at::kFloat).contiguous();
    };
    PolicyArgs args;
    args.tokens = in.tokens.to(at::kLong).contiguous();
    args.per_token.old_logprobs = fp32(in.old_logprobs);
    args.per_token.advantages = fp32(in.advantages);
    if (p.use_kl_loss) {
      TORCH_CHECK(in.ref_logprobs.defined(), "policy_loss: use_kl_loss needs ref_logprobs");
      args.per_token.ref_logprobs = fp32(in.ref_logprobs);
    }
    args.scalars.clip_low = p.clip_ratio_low;
    args.scalars.clip_high = p.clip_ratio_high;
    args.scalars.clip_c = p.clip_ratio_c;
    args.scalars.use_kl = p.use_kl_loss;
    args.scalars.kl_type = p.kl_type;
    args.scalars.kl_coef = p.kl_loss_coef;
    args.scalars.entropy_coeff = p.entropy_coeff;
    args.scalars.inv_n = 1.0 / static_cast<double>(n);
    args.temperature = p.temperature;
    args.options = options_;
    fused::PolicySums sums;
    args.sums = &sums;

    PolicyLossOutputs out;
    const at::TensorOptions opts = hidden.options().dtype(at::kFloat);
    if (grad_needed(hidden, lm_head)) {
      args.need_hidden = hidden.requires_grad();
      args.need_weight = lm_head.requires_grad();
      out.loss = PolicyLossFn::apply(hidden, lm_head, &args)[0];
    } else {
      const fused::DeviceKernels& k = kernels_for(hidden);
      fused::LogprobStats st =
          k.logprob_forward(hidden, lm_head, args.tokens, p.temperature, options_);
      sums = k.policy_sums(st, args.per_token, args.scalars);
      out.loss = at::scalar_tensor(loss_value(sums, args.scalars), opts);
    }
    const double inv_n = args.scalars.inv_n;
    out.pg_loss = at::scalar_tensor(sums.pg * inv_n, opts);
    out.kl = at::scalar_tensor(p.use_kl_loss ? sums.kl * inv_n : 0.0, opts);
    out.entropy = at::scalar_tensor(sums.entropy * inv_n, opts);
    out.clip_frac = at::scalar_tensor(sums.clipped * inv_n, opts);
    return out;
  }

 private:
  FusedOptions options_;
};

}  // namespace

std::unique_ptr<Ops> make_fused_ops(const FusedOptions& options) {
  return std::make_unique<FusedOps>(options);
}

const Ops& fused_ops_default() {
  static const FusedOps ops{FusedOptions{}};
  return ops;
}

}  // namespace grpo::kernels
