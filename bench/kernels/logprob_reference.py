#!/usr/bin/env python3
"""The unfused GRPO log-prob + loss in Python/LibTorch, the Python reference of RESULTS.md here:
logits, log_softmax, gather, PPO clip 0.2 (verl's dual clip) + 0.001 x low_var_kl, token mean,
backward. Same inputs and measurement as kernels_logprob_bench (peak VmHWM above the inputs,
reset after they are built). Prints one JSON object. Needs python3-torch (Debian's 1.13;
scripts/install-deps.sh --bench).
   logprob_reference.py [--tokens N] [--hidden H] [--vocab V] [--threads T] [--seed S]"""
import argparse
import json
import math
import time

import torch


def status_gib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return float(line.split()[1]) / (1024.0 * 1024.0)
    return -1.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    n, h, v = a.tokens, a.hidden, a.vocab
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    rss0 = status_gib("VmRSS")
    with torch.no_grad():
        hidden = torch.empty(n, h).normal_(0.0, 1.0)
        weight = torch.empty(v, h).normal_(0.0, 1.0 / math.sqrt(h))
        tokens = torch.randint(v, (n,))
        base = -math.log(v) - 0.5
        old = base + 0.3 * torch.randn(n)
        ref = base + 0.3 * torch.randn(n)
        adv = torch.randn(n)
    hidden.requires_grad_(True)
    weight.requires_grad_(True)
    rss_inputs = status_gib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

    t0 = time.monotonic()
    logits = hidden @ weight.t()
    logp = torch.log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(torch.clamp(logp - old, -20.0, 20.0))
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 0.8, 1.2)
    clipped = torch.maximum(pg1, pg2)
    pg = torch.where(adv < 0, torch.minimum(-adv * 3.0, clipped), clipped)
    kl = torch.clamp(ref - logp, -20.0, 20.0)
    kl = torch.clamp(torch.exp(kl) - kl - 1.0, -10.0, 10.0)
    loss = pg.mean() + 0.001 * kl.mean()
    loss_value = loss.item()
    fwd = time.monotonic() - t0
    peak_fwd = status_gib("VmHWM")
    t1 = time.monotonic()
    loss.backward()
    bwd = time.monotonic() - t1
    peak = status_gib("VmHWM")
    print(json.dumps({
        "impl": "python-reference", "dtype": "fp32", "tokens": n, "hidden": h, "vocab": v,
        "threads": a.threads, "inputs_gib": round(rss_inputs - rss0, 3),
        "peak_above_inputs_fwd_gib": round(peak_fwd - rss_inputs, 3),
        "peak_above_inputs_gib": round(peak - rss_inputs, 3),
        "end_above_inputs_gib": round(status_gib("VmRSS") - rss_inputs, 3),
        "forward_s": round(fwd, 2), "backward_s": round(bwd, 2), "total_s": round(fwd + bwd, 2),
        "loss": loss_value, "grad_hidden_norm": hidden.grad.norm().item(),
        "grad_weight_norm": weight.grad.norm().item()}))


if __name__ == "__main__":
    main()
