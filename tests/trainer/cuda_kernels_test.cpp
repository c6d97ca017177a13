// The CUDA kernels (kernels/cuda, launcher API) against plain C++ fp64 implementations on random
// inputs: RMSNorm, the router (counts, permutation, backward), the token log-probs (forward and
// the recomputing backward) and the eager GRPO loss with its gradients, in fp32 (relative error
// <= 1e-5) and bf16 (<= 1e-2), with chunks small enough that partial token chunks and vocabulary
// blocks occur. Every output buffer is filled with 0xFF (NaN) before each launch.
// Needs a GPU: every test skips, saying so, where no CUDA device is visible. Label: cuda.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grpo/kernels/cuda/launch.h"
#include "grpo/kernels/policy_math.h"

namespace grpo::kernels::cuda {
namespace {

// ---- host helpers ----

std::uint16_t to_bf16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

float from_bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f = 0.0f;
  std::memcpy(&f, &u, 4);
  return f;
}

double round_bf16(double v) {
  return from_bf16(to_bf16(static_cast<float>(v)));
}

double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

template <typename T>
std::vector<double> widen(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

std::vector<double> widen_bf16(const std::vector<std::uint16_t>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = from_bf16(v[i]);
  return out;
}

class Buffer {
 public:
  explicit Buffer(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 1)) {
    EXPECT_EQ(cudaMalloc(&p_, bytes_), cudaSuccess);
    poison();
  }
  template <typename T>
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size() * sizeof(T)) {
    EXPECT_EQ(cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~Buffer() { cudaFree(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void poison() { EXPECT_EQ(cudaMemset(p_, 0xFF, bytes_), cudaSuccess); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }
  template <typename T>
  std::vector<T> read(std::size_t count) const {
    std::vector<T> host(count);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), p_, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

std::vector<float> randn(std::size_t n, std::mt19937& rng, double scale = 1.0) {
  std::normal_distribution<float> d(0.0f, static_cast<float>(scale));
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() == 0) {
      GTEST_SKIP() << "no CUDA device visible: the CUDA kernel tests need a GPU (this machine "
                      "only compiles them; see docs/kernels.md)";
    }
    rng_.seed(11);
  }
  std::mt19937 rng_;
};

#define ASSERT_OK(expr)                              \
  do {                                               \
    const ::grpo::kernels::cuda::Status s_ = (expr); \
    ASSERT_TRUE(s_.ok()) << s_.message;              \
  } while (0)

// ---- RMSNorm ----

void check_rms_norm(std::mt19937& rng, DType dtype, std::int64_t rows, std::int64_t dim,
                    double tol) {
  const bool bf = dtype == DType::kBFloat16;
  std::vector<float> x = randn(static_cast<std::size_t>(rows * dim), rng);
  std::vector<float> w = randn(static_cast<std::size_t>(dim), rng, 0.1);
  for (float& v : w) v += 1.0f;
  std::vector<float> dy = randn(x.size(), rng);
  if (bf) {
    for (auto* v : {&x, &w, &dy}) {
      for (float& f : *v) f = static_cast<float>(round_bf16(f));
    }
  }
  auto upload = [&](const std::vector<float>& v) {
    if (!bf) return std::make_unique<Buffer>(v);
    std::vector<std::uint16_t> b(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) b[i] = to_bf16(v[i]);
    return std::make_unique<Buffer>(b);
  };
  auto read = [&](const Buffer& b, std::size_t n) {
    return bf ? widen_bf16(b.read<std::uint16_t>(n)) : widen(b.read<float>(n));
  };
  const std::size_t es = bf ? 2 : 4;
  auto dx_buf = upload(x), dw_buf = upload(w), dy_buf = upload(dy);
  Buffer y(x.size() * es), rstd(static_cast<std::size_t>(rows) * 4), gx(x.size() * es),
      gw(w.size() * es), acc(w.size() * 4);
  ASSERT_OK(rms_norm_forward(dtype, dx_buf->get(), dw_buf->get(), y.get(), rstd.as<float>(), rows,
                             dim, 1e-6f, nullptr));
  ASSERT_OK(rms_norm_backward(dtype, dy_buf->get(), dx_buf->get(), dw_buf->get(), rstd.as<float>(),
                              gx.get(), gw.get(), acc.as<float>(), rows, dim, nullptr));
  std::vector<double> want_y(x.size()), want_dx(x.size()), want_dw(w.size(), 0.0);
  for (std::int64_t i = 0; i < rows; ++i) {
    double ss = 0.0;
    for (std::int64_t j = 0; j < dim; ++j) ss += double(x[i * dim + j]) * x[i * dim + j];
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(dim) + 1e-6);
    double dot = 0.0;
    for (std::int64_t j = 0; j < dim; ++j) {
      const double xhat = x[i * dim + j] * r;
      want_y[i * dim + j] = w[j] * xhat;
      want_dw[j] += dy[i * dim + j] * xhat;
      dot += dy[i * dim + j] * w[j] * xhat;
    }
    for (std::int64_t j = 0; j < dim; ++j) {
      want_dx[i * dim + j] =
          r * (dy[i * dim + j] * w[j] - x[i * dim + j] * r * dot / static_cast<double>(dim));
    }
  }
  EXPECT_LE(rel_err(read(y, x.size()), want_y), tol) << "y";
  EXPECT_LE(rel_err(read(gx, x.size()), want_dx), tol) << "dx";
  EXPECT_LE(rel_err(read(gw, w.size()), want_dw), tol) << "dw";
}

TEST_F(CudaKernels, RmsNormMatchesFp64) {
  check_rms_norm(rng_, DType::kFloat32, 37, 129, 1e-5);
  check_rms_norm(rng_, DType::kFloat32, 1, 32, 1e-5);
  check_rms_norm(rng_, DType::kBFloat16, 37, 129, 1e-2);
}

// ---- router ----

void check_router(std::vector<float> logits, std::int64_t n, std::int64_t e, std::int64_t k,
                  bool norm, std::mt19937& rng) {
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(n));
  for (auto& v : valid) v = std::uniform_real_distribution<double>(0, 1)(rng) < 0.7 ? 1 : 0;
  Buffer z(logits), ok(valid);
  Buffer probs(n * e * 4), weights(n * k * 4), idx(n * k * 8), sums(n * 4), counts(e * 8),
      offsets((e + 1) * 8), st(n * k * 8), sp(n * k * 8);
  RouterBuffers out{probs.as<float>(),     weights.as<float>(),       idx.as<std::int64_t>(),
                    sums.as<float>(),      counts.as<std::int64_t>(), offsets.as<std::int64_t>(),
                    st.as<std::int64_t>(), sp.as<std::int64_t>()};
  ASSERT_OK(router_forward(z.as<float>(), n, e, k, norm, ok.as<bool>(), out, nullptr));

  // fp64 reference: softmax, top-k (ties to the lower index), counts, stable grouping.
  std::vector<double> p(n * e), w(n * k), s(n);
  std::vector<std::int64_t> ix(n * k), cnt(e, 0), all(e, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    double m = -1e300, tot = 0.0;
    for (std::int64_t j = 0; j < e; ++j) m = std::max(m, double(logits[i * e + j]));
    for (std::int64_t j = 0; j < e; ++j) tot += std::exp(logits[i * e + j] - m);
    for (std::int64_t j = 0; j < e; ++j) p[i * e + j] = std::exp(logits[i * e + j] - m) / tot;
    std::vector<std::int64_t> order(e);
    for (std::int64_t j = 0; j < e; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](auto a, auto b) { return p[i * e + a] > p[i * e + b]; });
    for (std::int64_t t = 0; t < k; ++t) {
      ix[i * k + t] = order[t];
      w[i * k + t] = p[i * e + order[t]];
      s[i] += w[i * k + t];
      ++all[order[t]];
      if (valid[i]) ++cnt[order[t]];
    }
    if (norm) {
      for (std::int64_t t = 0; t < k; ++t) w[i * k + t] /= s[i];
    }
  }
  std::vector<std::int64_t> off(e + 1, 0), want_st, want_sp;
  for (std::int64_t j = 0; j < e; ++j) off[j + 1] = off[j] + all[j];
  for (std::int64_t j = 0; j < e; ++j) {
    for (std::int64_t q = 0; q < n * k; ++q) {
      if (ix[q] == j) {
        want_st.push_back(q / k);
        want_sp.push_back(q);
      }
    }
  }
  EXPECT_LE(rel_err(widen(probs.read<float>(n * e)), p), 1e-5);
  EXPECT_LE(rel_err(widen(weights.read<float>(n * k)), w), 1e-5);
  EXPECT_EQ(idx.read<std::int64_t>(n * k), ix);
  EXPECT_EQ(counts.read<std::int64_t>(e), cnt);
  EXPECT_EQ(offsets.read<std::int64_t>(e + 1), off);
  EXPECT_EQ(st.read<std::int64_t>(n * k), want_st);
  EXPECT_EQ(sp.read<std::int64_t>(n * k), want_sp);

  // Backward against the fp64 chain rule.
  std::vector<float> gp = randn(n * e, rng), gw = randn(n * k, rng);
  Buffer gpb(gp), gwb(gw), grad(n * e * 4);
  ASSERT_OK(router_backward(probs.as<float>(), weights.as<float>(), idx.as<std::int64_t>(),
                            sums.as<float>(), gpb.as<float>(), gwb.as<float>(), n, e, k, norm,
                            grad.as<float>(), nullptr));
  std::vector<double> want(n * e);
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<double> t(gp.begin() + i * e, gp.begin() + (i + 1) * e);
    double dot = 0.0;
    for (std::int64_t q = 0; q < k; ++q) dot += gw[i * k + q] * w[i * k + q];
    for (std::int64_t q = 0; q < k; ++q) {
      t[ix[i * k + q]] += norm ? (gw[i * k + q] - dot) / s[i] : gw[i * k + q];
    }
    double pt = 0.0;
    for (std::int64_t j = 0; j < e; ++j) pt += p[i * e + j] * t[j];
    for (std::int64_t j = 0; j < e; ++j) want[i * e + j] = p[i * e + j] * (t[j] - pt);
  }
  EXPECT_LE(rel_err(widen(grad.read<float>(n * e)), want), 1e-5);
}

TEST_F(CudaKernels, RouterMatchesFp64) {
  check_router(randn(300 * 16, rng_), 300, 16, 2, true, rng_);
  check_router(randn(77 * 60, rng_), 77, 60, 4, false, rng_);
  check_router(randn(1 * 8, rng_), 1, 8, 2, true, rng_);
}

TEST_F(CudaKernels, RouterSendsEveryTokenToOneExpert) {
  std::vector<float> z = randn(50 * 8, rng_);
  for (std::int64_t i = 0; i < 50; ++i) z[i * 8 + 3] += 10.0f;
  check_router(z, 50, 8, 1, true, rng_);
  check_router(z, 50, 8, 2, false, rng_);
}

// ---- log-probs and the GRPO loss ----

struct Problem {
  std::int64_t n, h, v;
  double temperature;
  std::vector<float> hidden, weight;  // values (bf16-representable when bf16)
  std::vector<std::int64_t> tokens;
};

Problem make_problem(std::mt19937& rng, std::int64_t n, std::int64_t h, std::int64_t v,
                     double temperature, bool bf) {
  Problem p{n, h, v, temperature, randn(n * h, rng), randn(v * h, rng, 3.0 / std::sqrt(h)), {}};
  if (bf) {
    for (auto* vec : {&p.hidden, &p.weight}) {
      for (float& f : *vec) f = static_cast<float>(round_bf16(f));
    }
  }
  std::uniform_int_distribution<std::int64_t> tok(0, v - 1);
  for (std::int64_t i = 0; i < n; ++i) p.tokens.push_back(tok(rng));
  return p;
}

struct Fp64 {
  std::vector<double> lse, entropy, logprob, prob;  // prob [n, v]
};

Fp64 reference(const Problem& p) {
  Fp64 r;
  r.prob.resize(p.n * p.v);
  for (std::int64_t i = 0; i < p.n; ++i) {
    std::vector<double> z(p.v);
    double m = -1e300;
    for (std::int64_t j = 0; j < p.v; ++j) {
      double s = 0.0;
      for (std::int64_t q = 0; q < p.h; ++q)
        s += double(p.hidden[i * p.h + q]) * p.weight[j * p.h + q];
      z[j] = s / p.temperature;
      m = std::max(m, z[j]);
    }
    double tot = 0.0;
    for (double zj : z) tot += std::exp(zj - m);
    const double lse = m + std::log(tot);
    double ent = 0.0;
    for (std::int64_t j = 0; j < p.v; ++j) {
      const double pj = std::exp(z[j] - lse);
      r.prob[i * p.v + j] = pj;
      ent -= pj * (z[j] - lse);
    }
    r.lse.push_back(lse);
    r.entropy.push_back(ent);
    r.logprob.push_back(z[p.tokens[i]] - lse);
  }
  return r;
}

// Gradients of sum_i a_i logprob_i + b_i entropy_i in hidden and weight.
void reference_grads(const Problem& p, const Fp64& r, const std::vector<double>& a,
                     const std::vector<double>& b, std::vector<double>* gh,
                     std::vector<double>* gw) {
  gh->assign(p.n * p.h, 0.0);
  gw->assign(p.v * p.h, 0.0);
  for (std::int64_t i = 0; i < p.n; ++i) {
    for (std::int64_t j = 0; j < p.v; ++j) {
      const double pj = r.prob[i * p.v + j];
      double dz = -pj * (a[i] + b[i] * (std::log(pj) + r.entropy[i]));
      if (j == p.tokens[i]) dz += a[i];
      dz /= p.temperature;
      for (std::int64_t q = 0; q < p.h; ++q) {
        (*gh)[i * p.h + q] += dz * p.weight[j * p.h + q];
        (*gw)[j * p.h + q] += dz * p.hidden[i * p.h + q];
      }
    }
  }
}

struct DeviceProblem {
  std::unique_ptr<Buffer> hidden, weight, tokens;
  LogprobProblem p;
};

DeviceProblem upload(const Problem& pr, DType dtype) {
  DeviceProblem d;
  if (dtype == DType::kBFloat16) {
    std::vector<std::uint16_t> h(pr.hidden.size()), w(pr.weight.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = to_bf16(pr.hidden[i]);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = to_bf16(pr.weight[i]);
    d.hidden = std::make_unique<Buffer>(h);
    d.weight = std::make_unique<Buffer>(w);
  } else {
    d.hidden = std::make_unique<Buffer>(pr.hidden);
    d.weight = std::make_unique<Buffer>(pr.weight);
  }
  d.tokens = std::make_unique<Buffer>(pr.tokens);
  d.p.dtype = dtype;
  d.p.hidden = d.hidden->get();
  d.p.weight = d.weight->get();
  d.p.tokens = d.tokens->as<std::int64_t>();
  d.p.n = pr.n;
  d.p.h = pr.h;
  d.p.v = pr.v;
  d.p.inv_temperature = static_cast<float>(1.0 / pr.temperature);
  return d;
}

class Blas {
 public:
  Blas() { EXPECT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS); }
  ~Blas() { cublasDestroy(handle_); }
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  BlasHandle get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

void check_logprobs(std::mt19937& rng, DType dtype, std::int64_t n, std::int64_t h, std::int64_t v,
                    double temperature, Chunking c, double tol) {
  const Problem pr = make_problem(rng, n, h, v, temperature, dtype == DType::kBFloat16);
  const Fp64 want = reference(pr);
  DeviceProblem d = upload(pr, dtype);
  Blas blas;
  Buffer lp(n * 4), ent(n * 4), lse(n * 4);
  Buffer ws(std::max(forward_workspace_bytes(d.p, c), backward_workspace_bytes(d.p, c)));
  ASSERT_OK(logprob_forward(blas.get(), d.p, c, lp.as<float>(), ent.as<float>(), lse.as<float>(),
                            ws.get(), ws.bytes(), nullptr));
  EXPECT_LE(rel_err(widen(lp.read<float>(n)), want.logprob), tol) << "logprobs";
  EXPECT_LE(rel_err(widen(ent.read<float>(n)), want.entropy), tol) << "entropy";

  std::vector<float> ga = randn(n, rng), gb = randn(n, rng);
  Buffer gab(ga), gbb(gb), gh(n * h * 4), gw(v * h * 4);
  ASSERT_OK(logprob_backward(blas.get(), d.p, c, lse.as<float>(), ent.as<float>(), gab.as<float>(),
                             gbb.as<float>(), gh.as<float>(), gw.as<float>(), ws.get(), ws.bytes(),
                             nullptr));
  std::vector<double> wh, ww;
  reference_grads(pr, want, widen(ga), widen(gb), &wh, &ww);
  EXPECT_LE(rel_err(widen(gh.read<float>(n * h)), wh), tol) << "d(hidden)";
  EXPECT_LE(rel_err(widen(gw.read<float>(v * h)), ww), tol) << "d(weight)";
}

TEST_F(CudaKernels, LogprobsMatchFp64) {
  check_logprobs(rng_, DType::kFloat32, 37, 24, 1000, 0.7, Chunking{13, 96}, 1e-5);
  check_logprobs(rng_, DType::kFloat32, 1, 16, 37, 1.0, Chunking{1, 37}, 1e-5);
  check_logprobs(rng_, DType::kFloat32, 64, 32, 64, 1.0, Chunking{64, 64}, 1e-5);
  check_logprobs(rng_, DType::kBFloat16, 37, 24, 1000, 1.0, Chunking{13, 96}, 1e-2);
}

void check_policy_loss(std::mt19937& rng, DType dtype, std::int64_t n, std::int64_t h,
                       std::int64_t v, KlType kl, double entropy_coeff, std::int64_t rows,
                       double tol) {
  const Problem pr = make_problem(rng, n, h, v, 1.0, dtype == DType::kBFloat16);
  const Fp64 want = reference(pr);
  std::vector<float> old(n), ref(n), adv = randn(n, rng);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (std::int64_t i = 0; i < n; ++i) {
    old[i] = static_cast<float>(want.logprob[i] + 0.4 * noise(rng));
    ref[i] = static_cast<float>(want.logprob[i] - 0.5 + 0.3 * noise(rng));
  }
  math::PolicyScalars s;
  s.clip_low = 0.2;
  s.clip_high = 0.28;
  s.kl_type = kl;
  s.kl_coef = 0.05;
  s.entropy_coeff = entropy_coeff;
  s.inv_n = 1.0 / static_cast<double>(n);

  double pg = 0.0, pg_scale = 0.0, klsum = 0.0, ent = 0.0, clipped = 0.0;
  std::vector<double> a(n), b(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const math::TokenLoss t = math::token_policy_loss(want.logprob[i], old[i], ref[i], adv[i], s);
    pg += t.pg;
    pg_scale += std::abs(t.pg);
    klsum += t.kl;
    ent += want.entropy[i];
    clipped += t.clipped ? 1.0 : 0.0;
    a[i] = t.dlogprob;
    b[i] = t.dentropy;
  }
  std::vector<double> wh, ww;
  reference_grads(pr, want, a, b, &wh, &ww);

  DeviceProblem d = upload(pr, dtype);
  const Chunking c{rows, v};
  Blas blas;
  Buffer oldb(old), refb(ref), advb(adv), sums(4 * 8), gh(n * h * 4), gw(v * h * 4);
  Buffer ws(eager_workspace_bytes(d.p, c));
  PolicyTokenInputs in{oldb.as<float>(), refb.as<float>(), advb.as<float>()};
  ASSERT_OK(policy_loss_eager(blas.get(), d.p, c, in, s, sums.as<double>(), gh.as<float>(),
                              gw.as<float>(), ws.get(), ws.bytes(), nullptr));
  const std::vector<double> got = sums.read<double>(4);
  EXPECT_LE(std::abs(got[1] - klsum) / std::max(std::abs(klsum), 1e-30), tol) << "kl";
  EXPECT_LE(std::abs(got[2] - ent) / ent, tol) << "entropy";
  EXPECT_NEAR(got[3], clipped, 1.0) << "clipped tokens";
  // pg sums terms of both signs: its error is relative to their sizes.
  EXPECT_LE(std::abs(got[0] - pg) / std::max({std::abs(pg), pg_scale, 1e-30}), tol) << "pg";
  EXPECT_LE(rel_err(widen(gh.read<float>(n * h)), wh), tol) << "d(hidden)";
  EXPECT_LE(rel_err(widen(gw.read<float>(v * h)), ww), tol) << "d(weight)";
}

TEST_F(CudaKernels, PolicyLossMatchesFp64) {
  for (KlType kl : {KlType::kLowVarKl, KlType::kKl, KlType::kAbs, KlType::kMse}) {
    check_policy_loss(rng_, DType::kFloat32, 37, 24, 1000, kl, 0.0, 16, 1e-5);
  }
  check_policy_loss(rng_, DType::kFloat32, 37, 24, 1000, KlType::kLowVarKl, 0.01, 5, 1e-5);
  check_policy_loss(rng_, DType::kFloat32, 1, 16, 37, KlType::kLowVarKl, 0.01, 1, 1e-5);
  check_policy_loss(rng_, DType::kBFloat16, 37, 24, 1000, KlType::kLowVarKl, 0.01, 16, 1e-2);
}

TEST_F(CudaKernels, DeviceDescription) {
  EXPECT_FALSE(device_description(0).empty());
}

}  // namespace
}  // namespace grpo::kernels::cuda
