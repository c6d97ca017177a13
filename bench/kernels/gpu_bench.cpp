// The CUDA kernels on a GPU: achieved memory bandwidth (RMSNorm, router) and FLOP rate (fused
// log-prob + GRPO loss at tokens 4096, hidden 2048, V 151,936) against the device's peak. Prints
// a Markdown table; exits 77 (skipped) with a message where no CUDA device is visible.
//   kernels_gpu_bench [--reps R]
// Peaks: memory from the memory clock and bus width; FLOP/s from the SM count, the clock and a
// per-architecture table of FLOP per clock per SM (sm_80: A100, sm_90: H100); approximate.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "grpo/kernels/cuda/launch.h"

namespace cu = grpo::kernels::cuda;

namespace {

#define CHECK_CUDA(expr)                                               \
  do {                                                                 \
    const cudaError_t e_ = (expr);                                     \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

void check(const cu::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "kernel launch failed: %s\n", s.message.c_str());
    std::exit(1);
  }
}

struct Peaks {
  double bytes_per_s = 0.0;
  double fp32_flops = 0.0;  // CUDA cores (cuBLAS fp32 without TF32)
  double bf16_flops = 0.0;  // tensor cores, dense
};

Peaks device_peaks(int dev) {
  int mem_khz = 0, bus_bits = 0, sm_khz = 0, sms = 0, major = 0;
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
  cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  Peaks p;
  p.bytes_per_s = 2.0 * mem_khz * 1e3 * bus_bits / 8.0;      // double data rate
  const double fp32_per_clk = major >= 9 ? 256.0 : 128.0;    // FMA lanes x 2 per SM
  const double bf16_per_clk = major >= 9 ? 4096.0 : 2048.0;  // dense tensor-core FLOP per SM
  p.fp32_flops = sms * (sm_khz * 1e3) * fp32_per_clk;
  p.bf16_flops = sms * (sm_khz * 1e3) * bf16_per_clk;
  return p;
}

class Timer {
 public:
  Timer() {
    CHECK_CUDA(cudaEventCreate(&a_));
    CHECK_CUDA(cudaEventCreate(&b_));
  }
  ~Timer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  template <typename Fn>
  double seconds(int reps, Fn&& fn) {
    fn();  // warm-up
    CHECK_CUDA(cudaEventRecord(a_));
    for (int i = 0; i < reps; ++i) fn();
    CHECK_CUDA(cudaEventRecord(b_));
    CHECK_CUDA(cudaEventSynchronize(b_));
    float ms = 0.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a_, b_));
    return ms / 1e3 / reps;
  }

 private:
  cudaEvent_t a_{}, b_{};
};

void* device_alloc(std::size_t bytes, std::vector<void*>* owned) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  CHECK_CUDA(cudaMemset(p, 0, bytes));
  owned->push_back(p);
  return p;
}

// Random-ish device contents without a host round trip: small values from a hash.
void fill_pattern(void* p, std::size_t bytes) {
  CHECK_CUDA(cudaMemset(p, 0x3c, bytes));  // 0x3c3c3c3c: fp32 ~0.0115, bf16 ~0.0115
}

void row(const char* what, const char* dtype, double seconds, double value, double peak,
         const char* unit) {
  std::printf("| %s | %s | %.3f | %.1f %s | %.0f %% |\n", what, dtype, seconds * 1e3,
              value / (unit[0] == 'T' ? 1e12 : 1e9), unit, 100.0 * value / peak);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 10;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--reps") reps = std::stoi(argv[++i]);
  }
  if (cu::device_count() == 0) {
    std::printf("SKIP: no CUDA device visible; the GPU benchmark did not run\n");
    return 77;
  }
  const Peaks peak = device_peaks(0);
  std::printf("device: %s\n", cu::device_description(0).c_str());
  std::printf(
      "peaks (approximate): memory %.0f GB/s, fp32 %.1f TFLOP/s, bf16 tensor %.0f TFLOP/s\n\n",
      peak.bytes_per_s / 1e9, peak.fp32_flops / 1e12, peak.bf16_flops / 1e12);
  std::printf("| kernel | dtype | ms per call | achieved | of peak |\n|---|---|---|---|---|\n");
  std::vector<void*> owned;
  Timer timer;

  // RMSNorm over [32768, 4096]: bytes = read x, write y (+ weight, rstd); backward reads dy, x,
  // writes dx, and reads dy, x again for d(weight).
  for (cu::DType dt : {cu::DType::kBFloat16, cu::DType::kFloat32}) {
    const std::int64_t rows = 32768, dim = 4096;
    const std::size_t es = dt == cu::DType::kBFloat16 ? 2 : 4;
    const double bytes = static_cast<double>(rows * dim * static_cast<std::int64_t>(es));
    const char* name = dt == cu::DType::kBFloat16 ? "bf16" : "fp32";
    void* x = device_alloc(rows * dim * es, &owned);
    fill_pattern(x, rows * dim * es);
    void* w = device_alloc(dim * es, &owned);
    fill_pattern(w, dim * es);
    void* y = device_alloc(rows * dim * es, &owned);
    void* dx = device_alloc(rows * dim * es, &owned);
    void* dw = device_alloc(dim * es, &owned);
    auto* rstd = static_cast<float*>(device_alloc(rows * 4, &owned));
    auto* acc = static_cast<float*>(device_alloc(dim * 4, &owned));
    const double fwd = timer.seconds(
        reps, [&] { check(cu::rms_norm_forward(dt, x, w, y, rstd, rows, dim, 1e-6f, nullptr)); });
    row("rms_norm forward", name, fwd, 2.0 * bytes / fwd, peak.bytes_per_s, "GB/s");
    const double bwd = timer.seconds(reps, [&] {
      check(cu::rms_norm_backward(dt, y, x, w, rstd, dx, dw, acc, rows, dim, nullptr));
    });
    row("rms_norm backward", name, bwd, 5.0 * bytes / bwd, peak.bytes_per_s, "GB/s");
  }

  // Router: 65536 tokens, 128 experts, top-8 (Qwen3-MoE's shape).
  {
    const std::int64_t n = 65536, e = 128, k = 8;
    auto* logits = static_cast<float*>(device_alloc(n * e * 4, &owned));
    fill_pattern(logits, n * e * 4);
    cu::RouterBuffers b;
    b.probs = static_cast<float*>(device_alloc(n * e * 4, &owned));
    b.weights = static_cast<float*>(device_alloc(n * k * 4, &owned));
    b.indices = static_cast<std::int64_t*>(device_alloc(n * k * 8, &owned));
    b.topk_sums = static_cast<float*>(device_alloc(n * 4, &owned));
    b.tokens_per_expert = static_cast<std::int64_t*>(device_alloc(e * 8, &owned));
    b.expert_offsets = static_cast<std::int64_t*>(device_alloc((e + 1) * 8, &owned));
    b.sorted_tokens = static_cast<std::int64_t*>(device_alloc(n * k * 8, &owned));
    b.sorted_pairs = static_cast<std::int64_t*>(device_alloc(n * k * 8, &owned));
    const double t = timer.seconds(
        reps, [&] { check(cu::router_forward(logits, n, e, k, true, nullptr, b, nullptr)); });
    // logits in, probs out, weights/indices/permutation out.
    row("router forward", "fp32", t, (2.0 * n * e * 4 + n * k * (4 + 8 + 16)) / t, peak.bytes_per_s,
        "GB/s");
  }

  // Fused log-prob + GRPO loss at the CPU benchmark's size.
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
  for (cu::DType dt : {cu::DType::kBFloat16, cu::DType::kFloat32}) {
    const std::int64_t n = 4096, h = 2048, v = 151936;
    const std::size_t es = dt == cu::DType::kBFloat16 ? 2 : 4;
    const char* name = dt == cu::DType::kBFloat16 ? "bf16" : "fp32";
    cu::LogprobProblem p;
    p.dtype = dt;
    p.hidden = device_alloc(n * h * es, &owned);
    fill_pattern(const_cast<void*>(p.hidden), n * h * es);
    p.weight = device_alloc(v * h * es, &owned);
    fill_pattern(const_cast<void*>(p.weight), v * h * es);
    p.tokens = static_cast<std::int64_t*>(device_alloc(n * 8, &owned));
    p.n = n;
    p.h = h;
    p.v = v;
    auto* lp = static_cast<float*>(device_alloc(n * 4, &owned));
    auto* ent = static_cast<float*>(device_alloc(n * 4, &owned));
    auto* lse = static_cast<float*>(device_alloc(n * 4, &owned));
    auto* adv = static_cast<float*>(device_alloc(n * 4, &owned));
    auto* gh = static_cast<float*>(device_alloc(n * h * 4, &owned));
    auto* gw = static_cast<float*>(device_alloc(v * h * 4, &owned));
    auto* sums = static_cast<double*>(device_alloc(4 * 8, &owned));
    const cu::Chunking fc = cu::block_chunking(p, std::size_t{256} << 20);
    const cu::Chunking ec = cu::eager_chunking(p, std::size_t{1} << 30);
    void* ws = device_alloc(
        std::max(cu::forward_workspace_bytes(p, fc), cu::eager_workspace_bytes(p, ec)), &owned);
    const std::size_t ws_bytes =
        std::max(cu::forward_workspace_bytes(p, fc), cu::eager_workspace_bytes(p, ec));
    const double flop1 = 2.0 * n * h * v;
    const double pk = dt == cu::DType::kBFloat16 ? peak.bf16_flops : peak.fp32_flops;
    const double fwd = timer.seconds(reps, [&] {
      check(cu::logprob_forward(blas, p, fc, lp, ent, lse, ws, ws_bytes, nullptr));
    });
    row("log-probs forward (1 product)", name, fwd, flop1 / fwd, pk, "TFLOP/s");
    cu::PolicyTokenInputs in{lp, lse, adv};
    grpo::kernels::math::PolicyScalars s;
    s.inv_n = 1.0 / n;
    const double eager = timer.seconds(reps, [&] {
      check(cu::policy_loss_eager(blas, p, ec, in, s, sums, gh, gw, ws, ws_bytes, nullptr));
    });
    row("GRPO loss fwd+bwd (3 products)", name, eager, 3.0 * flop1 / eager, pk, "TFLOP/s");
    std::printf("|   (workspace %.2f GiB, %lld token rows per chunk) | | | | |\n",
                static_cast<double>(ws_bytes) / (1 << 30), static_cast<long long>(ec.rows));
  }
  cublasDestroy(blas);
  for (void* p : owned) cudaFree(p);
  return 0;
}
