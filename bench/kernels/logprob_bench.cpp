// One measurement of the GRPO log-prob + loss, forward and backward, from hidden states [N, H]
// and an LM head [V, H], with the fused or the reference kernels: time and peak resident memory
// above the inputs (the process's high-water mark, reset after the inputs are built). Run each
// measurement in a fresh process (run_logprob.sh does). Prints one JSON object.
//   kernels_logprob_bench --impl fused|reference [--tokens N] [--hidden H] [--vocab V]
//                         [--threads T] [--dtype fp32|bf16] [--seed S] [--grad-chunk-mib M]
//                         [--vocab-block B]
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "grpo/kernels/fused.h"

namespace {

// A field of /proc/self/status in GiB (VmRSS: resident now, VmHWM: peak since the last reset).
double status_gib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      return std::strtod(line.c_str() + key.size() + 1, nullptr) / (1024.0 * 1024.0);
    }
  }
  return -1.0;
}

// Resets VmHWM to the current VmRSS (Linux >= 4.0).
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return static_cast<bool>(out);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int usage() {
  std::fprintf(stderr,
               "usage: kernels_logprob_bench --impl fused|reference [--tokens N] [--hidden H] "
               "[--vocab V] [--threads T] [--dtype fp32|bf16] [--seed S] [--grad-chunk-mib M] "
               "[--vocab-block B]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string impl;
  std::string dtype = "fp32";
  std::int64_t n = 4096, h = 2048, v = 151936, threads = 2, seed = 1;
  grpo::kernels::FusedOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string val = argv[++i];
    if (a == "--impl") {
      impl = val;
    } else if (a == "--tokens") {
      n = std::stoll(val);
    } else if (a == "--hidden") {
      h = std::stoll(val);
    } else if (a == "--vocab") {
      v = std::stoll(val);
    } else if (a == "--threads") {
      threads = std::stoll(val);
    } else if (a == "--dtype") {
      dtype = val;
    } else if (a == "--seed") {
      seed = std::stoll(val);
    } else if (a == "--grad-chunk-mib") {
      options.grad_chunk_bytes = std::stoll(val) << 20;
    } else if (a == "--vocab-block") {
      options.vocab_block = std::stoll(val);
    } else {
      return usage();
    }
  }
  if (impl != "fused" && impl != "reference") return usage();
  if (dtype != "fp32" && dtype != "bf16") return usage();
  const at::ScalarType type = dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  at::set_num_threads(static_cast<int>(threads));
  torch::manual_seed(static_cast<std::uint64_t>(seed));

  std::unique_ptr<grpo::kernels::Ops> fused;
  if (impl == "fused") fused = grpo::kernels::make_fused_ops(options);
  const grpo::kernels::Ops& ops =
      fused ? *fused : grpo::kernels::ops_for(grpo::kernels::Backend::kReference);

  const double rss0 = status_gib("VmRSS");
  at::Tensor hidden, weight;
  grpo::kernels::PolicyLossInputs in;
  {
    torch::NoGradGuard no_grad;
    hidden = at::empty({n, h}, type).normal_(0.0, 1.0);
    // Logits of unit scale, like a trained LM head's.
    weight = at::empty({v, h}, type).normal_(0.0, 1.0 / std::sqrt(static_cast<double>(h)));
    in.tokens = at::randint(v, {n}, at::kLong);
    // Log-probs near those of the random model (about -log V): ratios near 1, some clipped.
    const double base = -std::log(static_cast<double>(v)) - 0.5;
    in.old_logprobs = base + 0.3 * at::randn({n});
    in.ref_logprobs = base + 0.3 * at::randn({n});
    in.advantages = at::randn({n});
  }
  hidden.requires_grad_(true);
  weight.requires_grad_(true);
  grpo::kernels::PolicyLossParams p;  // clip 0.2, low_var_kl x 0.001, no entropy bonus
  p.clip_ratio_low = 0.2;
  p.clip_ratio_high = 0.2;
  p.use_kl_loss = true;
  p.kl_type = grpo::kernels::KlType::kLowVarKl;
  p.kl_loss_coef = 0.001;
  p.entropy_coeff = 0.0;

  const double rss_inputs = status_gib("VmRSS");
  if (!reset_peak()) std::fprintf(stderr, "warning: cannot reset VmHWM; peak includes setup\n");

  auto t0 = std::chrono::steady_clock::now();
  grpo::kernels::PolicyLossOutputs out = ops.policy_loss(hidden, weight, in, p);
  const double loss = out.loss.item<double>();
  const double fwd_s = seconds_since(t0);
  const double peak_fwd = status_gib("VmHWM");
  auto t1 = std::chrono::steady_clock::now();
  out.loss.backward();
  const double bwd_s = seconds_since(t1);
  const double peak = status_gib("VmHWM");
  const double rss_end = status_gib("VmRSS");

  std::printf(
      "{\"impl\": \"%s\", \"dtype\": \"%s\", \"tokens\": %lld, \"hidden\": %lld, \"vocab\": %lld, "
      "\"threads\": %lld, \"inputs_gib\": %.3f, \"peak_above_inputs_fwd_gib\": %.3f, "
      "\"peak_above_inputs_gib\": %.3f, \"end_above_inputs_gib\": %.3f, \"forward_s\": %.2f, "
      "\"backward_s\": %.2f, \"total_s\": %.2f, \"loss\": %.9g, \"pg_loss\": %.9g, \"kl\": %.9g, "
      "\"entropy\": %.9g, \"grad_hidden_norm\": %.9g, \"grad_weight_norm\": %.9g}\n",
      impl.c_str(), dtype.c_str(), static_cast<long long>(n), static_cast<long long>(h),
      static_cast<long long>(v), static_cast<long long>(threads), rss_inputs - rss0,
      peak_fwd - rss_inputs, peak - rss_inputs, rss_end - rss_inputs, fwd_s, bwd_s, fwd_s + bwd_s,
      loss, out.pg_loss.item<double>(), out.kl.item<double>(), out.entropy.item<double>(),
      hidden.grad().norm().item<double>(), weight.grad().norm().item<double>());
  return 0;
}
