// The LibTorch glue of the CUDA kernels: the fused backend's DeviceKernels table for CUDA tensors
// (kernels/src/fused_device.h), over the launcher API. Compiled into grpo_kernels only when
// GRPO_ENABLE_CUDA is on and LibTorch has CUDA (kernels/CMakeLists.txt); otherwise
// kernels/src/no_cuda_glue.cpp stands in. Workspaces come from LibTorch's caching allocator, the
// stream and cuBLAS handle are LibTorch's current ones.
//
// Not compiled on the project's CI machine (Debian's LibTorch has no CUDA): see docs/kernels.md.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>

#include "fused_device.h"
#include "grpo/kernels/cuda/launch.h"

namespace grpo::kernels::fused {
namespace {

constexpr std::size_t kBlockBudget = std::size_t{256} << 20;  // forward / recomputing backward
constexpr std::size_t kEagerBudget = std::size_t{1} << 30;    // [rows, V] logits of the loss

cuda::Stream stream() {
  return at::cuda::getCurrentCUDAStream().stream();
}

cuda::BlasHandle blas() {
  return at::cuda::getCurrentCUDABlasHandle();
}

void check(const cuda::Status& s) {
  TORCH_CHECK(s.ok(), "kernels = \"fused\" (CUDA): ", s.message);
}

// fp32 or bf16 operands of one dtype (anything else is computed in fp32).
std::pair<at::Tensor, at::Tensor> operands(const at::Tensor& a, const at::Tensor& b) {
  const bool bf16 = a.scalar_type() == at::kBFloat16 && b.scalar_type() == at::kBFloat16;
  const at::ScalarType t = bf16 ? at::kBFloat16 : at::kFloat;
  return {a.to(t).contiguous(), b.to(t).contiguous()};
}

cuda::DType dtype_of(const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 ? cuda::DType::kBFloat16 : cuda::DType::kFloat32;
}

const float* f32(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<float>() : nullptr;
}

at::Tensor workspace(std::size_t bytes, const at::Tensor& like) {
  return at::empty({static_cast<std::int64_t>(std::max<std::size_t>(bytes, 1))},
                   like.options().dtype(at::kByte));
}

cuda::LogprobProblem problem(const at::Tensor& h, const at::Tensor& w, const at::Tensor& tokens,
                             double temperature) {
  cuda::LogprobProblem p;
  p.dtype = dtype_of(h);
  p.hidden = h.data_ptr();
  p.weight = w.data_ptr();
  p.tokens = tokens.data_ptr<std::int64_t>();
  p.n = h.size(0);
  p.h = h.size(1);
  p.v = w.size(0);
  p.inv_temperature = static_cast<float>(1.0 / temperature);
  return p;
}

cuda::Chunking block_chunks(const cuda::LogprobProblem& p, const FusedOptions& o) {
  cuda::Chunking c = cuda::block_chunking(p, kBlockBudget);
  if (o.max_token_chunk > 0) c.rows = std::min(c.rows, o.max_token_chunk);
  return c;
}

LogprobStats logprob_forward(const at::Tensor& hidden, const at::Tensor& weight,
                             const at::Tensor& tokens, double temperature,
                             const FusedOptions& options) {
  const c10::cuda::CUDAGuard guard(hidden.device());
  auto [h, w] = operands(hidden, weight);
  const at::Tensor tok = tokens.to(at::kLong).contiguous();
  const cuda::LogprobProblem p = problem(h, w, tok, temperature);
  const cuda::Chunking c = block_chunks(p, options);
  LogprobStats out;
  const auto opts = h.options().dtype(at::kFloat);
  out.logprobs = at::empty({p.n}, opts);
  out.entropy = at::empty({p.n}, opts);
  out.lse = at::empty({p.n}, opts);
  at::Tensor ws = workspace(cuda::forward_workspace_bytes(p, c), h);
  check(cuda::logprob_forward(blas(), p, c, out.logprobs.data_ptr<float>(),
                              out.entropy.data_ptr<float>(), out.lse.data_ptr<float>(),
                              ws.data_ptr(), static_cast<std::size_t>(ws.numel()), stream()));
  return out;
}

Grads logprob_backward(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& tokens,
                       double temperature, const LogprobStats& saved,
                       const at::Tensor& grad_logprobs, const at::Tensor& grad_entropy,
                       bool need_hidden, bool need_weight, const FusedOptions& options) {
  const c10::cuda::CUDAGuard guard(hidden.device());
  auto [h, w] = operands(hidden, weight);
  const at::Tensor tok = tokens.to(at::kLong).contiguous();
  const cuda::LogprobProblem p = problem(h, w, tok, temperature);
  const cuda::Chunking c = block_chunks(p, options);
  const auto opts = h.options().dtype(at::kFloat);
  Grads g;
  if (need_hidden) g.hidden = at::empty({p.n, p.h}, opts);
  if (need_weight) g.weight = at::empty({p.v, p.h}, opts);
  const at::Tensor glp =
      grad_logprobs.defined() ? grad_logprobs.to(at::kFloat).contiguous() : at::Tensor();
  const at::Tensor gent =
      grad_entropy.defined() ? grad_entropy.to(at::kFloat).contiguous() : at::Tensor();
  const at::Tensor lse = saved.lse.contiguous();
  const at::Tensor ent = saved.entropy.contiguous();
  at::Tensor ws = workspace(cuda::backward_workspace_bytes(p, c), h);
  check(cuda::logprob_backward(blas(), p, c, f32(lse), f32(ent), f32(glp), f32(gent),
                               need_hidden ? g.hidden.data_ptr<float>() : nullptr,
                               need_weight ? g.weight.data_ptr<float>() : nullptr, ws.data_ptr(),
                               static_cast<std::size_t>(ws.numel()), stream()));
  return g;
}

cuda::PolicyTokenInputs token_inputs(const PolicyTokens& in) {
  return cuda::PolicyTokenInputs{f32(in.old_logprobs), f32(in.ref_logprobs), f32(in.advantages)};
}

PolicySums read_sums(const at::Tensor& sums) {
  const at::Tensor host = sums.cpu();
  const double* s = host.data_ptr<double>();
  return PolicySums{s[0], s[1], s[2], s[3]};
}

PolicySums policy_sums(const LogprobStats& stats, const PolicyTokens& in,
                       const math::PolicyScalars& scalars) {
  const c10::cuda::CUDAGuard guard(stats.logprobs.device());
  at::Tensor sums = at::empty({4}, stats.logprobs.options().dtype(at::kDouble));
  check(cuda::policy_sums(f32(stats.logprobs), f32(stats.entropy), token_inputs(in), scalars,
                          stats.logprobs.size(0), sums.data_ptr<double>(), stream()));
  return read_sums(sums);
}

EagerPolicy policy_loss_eager(const at::Tensor& hidden, const at::Tensor& weight,
                              const at::Tensor& tokens, const PolicyTokens& in,
                              const math::PolicyScalars& scalars, double temperature,
                              bool need_hidden, bool need_weight, const FusedOptions& options) {
  const c10::cuda::CUDAGuard guard(hidden.device());
  auto [h, w] = operands(hidden, weight);
  const at::Tensor tok = tokens.to(at::kLong).contiguous();
  const cuda::LogprobProblem p = problem(h, w, tok, temperature);
  cuda::Chunking c = cuda::eager_chunking(p, kEagerBudget);
  if (options.max_token_chunk > 0) c.rows = std::min(c.rows, options.max_token_chunk);
  const auto opts = h.options().dtype(at::kFloat);
  EagerPolicy out;
  if (need_hidden) out.grads.hidden = at::empty({p.n, p.h}, opts);
  if (need_weight) out.grads.weight = at::empty({p.v, p.h}, opts);
  at::Tensor sums = at::empty({4}, opts.dtype(at::kDouble));
  at::Tensor ws = workspace(cuda::eager_workspace_bytes(p, c), h);
  check(cuda::policy_loss_eager(blas(), p, c, token_inputs(in), scalars, sums.data_ptr<double>(),
                                need_hidden ? out.grads.hidden.data_ptr<float>() : nullptr,
                                need_weight ? out.grads.weight.data_ptr<float>() : nullptr,
                                ws.data_ptr(), static_cast<std::size_t>(ws.numel()), stream()));
  out.sums = read_sums(sums);
  return out;
}

RmsNormForward rms_norm_forward(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const c10::cuda::CUDAGuard guard(x.device());
  const bool native = x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16;
  const at::Tensor xx = native ? x.contiguous() : x.to(at::kFloat).contiguous();
  const at::Tensor ww = weight.to(xx.scalar_type()).contiguous();
  RmsNormForward out;
  out.y = at::empty_like(xx);
  out.rstd = at::empty({xx.size(0)}, xx.options().dtype(at::kFloat));
  check(cuda::rms_norm_forward(dtype_of(xx), xx.data_ptr(), ww.data_ptr(), out.y.data_ptr(),
                               out.rstd.data_ptr<float>(), xx.size(0), xx.size(1),
                               static_cast<float>(eps), stream()));
  if (!native) out.y = out.y.to(x.scalar_type());
  return out;
}

RmsNormGrads rms_norm_backward(const at::Tensor& grad_y, const at::Tensor& x,
                               const at::Tensor& weight, const at::Tensor& rstd, bool need_x,
                               bool need_weight) {
  const c10::cuda::CUDAGuard guard(x.device());
  const bool native = x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16;
  const at::ScalarType t = native ? x.scalar_type() : at::kFloat;
  const at::Tensor xx = x.to(t).contiguous();
  const at::Tensor ww = weight.to(t).contiguous();
  const at::Tensor dy = grad_y.to(t).contiguous();
  RmsNormGrads g;
  if (need_x) g.x = at::empty_like(xx);
  if (need_weight) g.weight = at::empty_like(ww);
  at::Tensor acc =
      need_weight ? at::empty({ww.size(0)}, xx.options().dtype(at::kFloat)) : at::Tensor();
  check(cuda::rms_norm_backward(
      dtype_of(xx), dy.data_ptr(), xx.data_ptr(), ww.data_ptr(), rstd.data_ptr<float>(),
      need_x ? g.x.data_ptr() : nullptr, need_weight ? g.weight.data_ptr() : nullptr,
      need_weight ? acc.data_ptr<float>() : nullptr, xx.size(0), xx.size(1), stream()));
  if (!native) {
    if (g.x.defined()) g.x = g.x.to(x.scalar_type());
    if (g.weight.defined()) g.weight = g.weight.to(weight.scalar_type());
  }
  return g;
}

RouterForward route_forward(const at::Tensor& logits, std::int64_t top_k, bool norm_topk_prob,
                            const at::Tensor& valid) {
  const c10::cuda::CUDAGuard guard(logits.device());
  const at::Tensor z = logits.to(at::kFloat).contiguous();
  const std::int64_t n = z.size(0);
  const std::int64_t e = z.size(1);
  const auto f = z.options();
  const auto l = z.options().dtype(at::kLong);
  RouterForward r;
  r.probs = at::empty({n, e}, f);
  r.weights = at::empty({n, top_k}, f);
  r.indices = at::empty({n, top_k}, l);
  r.topk_sums = at::empty({n}, f);
  r.tokens_per_expert = at::empty({e}, l);
  r.expert_offsets = at::empty({e + 1}, l);
  r.sorted_tokens = at::empty({n * top_k}, l);
  r.sorted_pairs = at::empty({n * top_k}, l);
  const at::Tensor ok = valid.defined() ? valid.to(z.device(), at::kBool).contiguous() : valid;
  cuda::RouterBuffers b{r.probs.data_ptr<float>(),
                        r.weights.data_ptr<float>(),
                        r.indices.data_ptr<std::int64_t>(),
                        r.topk_sums.data_ptr<float>(),
                        r.tokens_per_expert.data_ptr<std::int64_t>(),
                        r.expert_offsets.data_ptr<std::int64_t>(),
                        r.sorted_tokens.data_ptr<std::int64_t>(),
                        r.sorted_pairs.data_ptr<std::int64_t>()};
  check(cuda::router_forward(z.data_ptr<float>(), n, e, top_k, norm_topk_prob,
                             ok.defined() ? ok.data_ptr<bool>() : nullptr, b, stream()));
  return r;
}

at::Tensor route_backward(const RouterForward& fwd, const at::Tensor& grad_probs,
                          const at::Tensor& grad_weights, bool norm_topk_prob) {
  const c10::cuda::CUDAGuard guard(fwd.probs.device());
  const at::Tensor gp =
      grad_probs.defined() ? grad_probs.to(at::kFloat).contiguous() : at::Tensor();
  const at::Tensor gw =
      grad_weights.defined() ? grad_weights.to(at::kFloat).contiguous() : at::Tensor();
  const std::int64_t n = fwd.probs.size(0);
  const std::int64_t e = fwd.probs.size(1);
  const std::int64_t k = fwd.indices.size(1);
  at::Tensor grad = at::empty({n, e}, fwd.probs.options());
  check(cuda::router_backward(f32(fwd.probs), f32(fwd.weights),
                              fwd.indices.data_ptr<std::int64_t>(), f32(fwd.topk_sums), f32(gp),
                              f32(gw), n, e, k, norm_topk_prob, grad.data_ptr<float>(), stream()));
  return grad;
}

}  // namespace

const DeviceKernels* cuda_kernels() {
  static const DeviceKernels kernels{
      "cuda",
      &logprob_forward,
      &logprob_backward,
      &policy_sums,
      &policy_loss_eager,
      &rms_norm_forward,
      &rms_norm_backward,
      &route_forward,
      &route_backward,
  };
  return &kernels;
}

}  // namespace grpo::kernels::fused
