#include "cpu/fused_rms_norm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace grpo::kernels::cpu {
namespace {

// A value rounded to scalar_t and back, as the reference's .to(dtype) does.
template <typename scalar_t>
float round_to(float v) {
  return static_cast<float>(static_cast<scalar_t>(v));
}

template <typename scalar_t>
void forward_rows(const scalar_t* x, const scalar_t* w, scalar_t* y, float* rstd, std::int64_t rows,
                  std::int64_t d, double eps) {
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(d, 1));
  at::parallel_for(0, rows, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const scalar_t* xr = x + i * d;
      double ss = 0.0;
      for (std::int64_t j = 0; j < d; ++j) {
        const double v = static_cast<float>(xr[j]);
        ss += v * v;
      }
      const float r = static_cast<float>(
          1.0 /
          std::sqrt(static_cast<double>(static_cast<float>(ss / static_cast<double>(d))) + eps));
      rstd[i] = r;
      scalar_t* yr = y + i * d;
      for (std::int64_t j = 0; j < d; ++j) {
        const float normed = round_to<scalar_t>(static_cast<float>(xr[j]) * r);
        yr[j] = static_cast<scalar_t>(static_cast<float>(w[j]) * normed);
      }
    }
  });
}

template <typename scalar_t>
void backward_rows(const scalar_t* dy, const scalar_t* x, const scalar_t* w, const float* rstd,
                   scalar_t* dx, scalar_t* dw, std::int64_t rows, std::int64_t d) {
  // Rows are split into one contiguous part per thread; each part sums its own d(weight), and the
  // parts are added in order (deterministic for a given thread count).
  const std::int64_t parts =
      std::max<std::int64_t>(1, std::min<std::int64_t>(rows, at::get_num_threads()));
  std::vector<double> partial(dw != nullptr ? static_cast<std::size_t>(parts * d) : 0, 0.0);
  at::parallel_for(0, parts, 1, [&](std::int64_t pb, std::int64_t pe) {
    std::vector<float> dn(static_cast<std::size_t>(d));
    for (std::int64_t p = pb; p < pe; ++p) {
      const std::int64_t r0 = rows * p / parts;
      const std::int64_t r1 = rows * (p + 1) / parts;
      double* acc = dw != nullptr ? partial.data() + p * d : nullptr;
      for (std::int64_t i = r0; i < r1; ++i) {
        const scalar_t* xr = x + i * d;
        const scalar_t* gr = dy + i * d;
        const float r = rstd[i];
        double dot = 0.0;
        for (std::int64_t j = 0; j < d; ++j) {
          const float xhat = static_cast<float>(xr[j]) * r;
          const float g = static_cast<float>(gr[j]);
          if (acc != nullptr) acc[j] += static_cast<double>(g) * round_to<scalar_t>(xhat);
          const float dnj = round_to<scalar_t>(g * static_cast<float>(w[j]));
          dn[static_cast<std::size_t>(j)] = dnj;
          dot += static_cast<double>(dnj) * xhat;
        }
        if (dx == nullptr) continue;
        const float mean = static_cast<float>(dot / static_cast<double>(d));
        scalar_t* out = dx + i * d;
        for (std::int64_t j = 0; j < d; ++j) {
          const float xhat = static_cast<float>(xr[j]) * r;
          out[j] = static_cast<scalar_t>(r * (dn[static_cast<std::size_t>(j)] - xhat * mean));
        }
      }
    }
  });
  if (dw == nullptr) return;
  for (std::int64_t j = 0; j < d; ++j) {
    double s = 0.0;
    for (std::int64_t p = 0; p < parts; ++p) s += partial[static_cast<std::size_t>(p * d + j)];
    dw[j] = static_cast<scalar_t>(static_cast<float>(s));
  }
}

template <typename Fn>
void dispatch(at::ScalarType type, Fn&& fn) {
  switch (type) {
    case at::kFloat:
      fn(float{});
      return;
    case at::kBFloat16:
      fn(at::BFloat16{});
      return;
    case at::kHalf:
      fn(at::Half{});
      return;
    default:
      TORCH_CHECK(false, "fused rms_norm (CPU): fp32, bf16 or fp16 expected, got ", type);
  }
}

}  // namespace

RmsNormForward rms_norm_forward(const at::Tensor& x, const at::Tensor& weight, double eps) {
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 1 && x.size(1) == weight.size(0) &&
                  x.scalar_type() == weight.scalar_type() && x.is_contiguous() &&
                  weight.is_contiguous(),
              "fused rms_norm: x [rows, D] and weight [D] of one dtype expected");
  RmsNormForward out;
  out.y = at::empty_like(x);
  out.rstd = at::empty({x.size(0)}, x.options().dtype(at::kFloat));
  dispatch(x.scalar_type(), [&](auto tag) {
    using scalar_t = decltype(tag);
    forward_rows<scalar_t>(x.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
                           out.y.data_ptr<scalar_t>(), out.rstd.data_ptr<float>(), x.size(0),
                           x.size(1), eps);
  });
  return out;
}

RmsNormGrads rms_norm_backward(const at::Tensor& grad_y, const at::Tensor& x,
                               const at::Tensor& weight, const at::Tensor& rstd, bool need_x,
                               bool need_weight) {
  RmsNormGrads g;
  const at::Tensor dy = grad_y.to(x.scalar_type()).contiguous();
  if (need_x) g.x = at::empty_like(x);
  if (need_weight) g.weight = at::empty_like(weight);
  if (!need_x && !need_weight) return g;
  dispatch(x.scalar_type(), [&](auto tag) {
    using scalar_t = decltype(tag);
    backward_rows<scalar_t>(
        dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
        rstd.data_ptr<float>(), need_x ? g.x.data_ptr<scalar_t>() : nullptr,
        need_weight ? g.weight.data_ptr<scalar_t>() : nullptr, x.size(0), x.size(1));
  });
  return g;
}

}  // namespace grpo::kernels::cpu
