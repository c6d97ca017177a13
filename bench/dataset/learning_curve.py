#!/usr/bin/python3
"""The learning curve of GRPO on a verl-format dataset (docs/datasets.md): a tiny random Qwen3
with the real tokenizer (scripts/make-tiny-qwen.py) trained by `grpo-launch run -p local-cpu` on
tests/data/gsm8k-style, SFT warm-start then GRPO, validated every few steps. Prints and writes
(OUT_DIR/curve.csv) the validation reward (verl's gsm8k score, greedy decoding, mean over the
validation records) against the step, and the memory and tokens/s the trainer reported, for
`kernels` fused and reference. Not run by the tests: minutes to hours on 2 cores.

  bench/dataset/learning_curve.py BUILD_DIR OUT_DIR [--sft 200] [--grpo 100] [--hidden 64]
                                  [--kernels fused,reference] [--test-freq 10]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def run_one(build, out, kernels, a):
    model = out / "model"
    if not (model / "config.json").exists():
        subprocess.run(["/usr/bin/python3", str(ROOT / "scripts/make-tiny-qwen.py"), str(model),
                        "--hidden", str(a.hidden)], check=True)
    run = out / f"run-{kernels}"
    data = ROOT / "tests/data/gsm8k-style"
    sets = {
        "data.train_files": str(data / "train.jsonl"), "data.val_files": str(data / "test.jsonl"),
        "data.max_prompt_length": 64, "data.max_response_length": 56, "data.val_size": 64,
        "data.train_batch_size": 8, "actor_rollout_ref.actor.ppo_mini_batch_size": 8,
        "actor_rollout_ref.rollout.n": 4, "trainer.sft_warmup_steps": a.sft,
        "trainer.total_training_steps": a.grpo, "trainer.sft_batch_size": 16,
        "trainer.sft_lr": 3e-3, "actor_rollout_ref.actor.optim.lr": 1e-4,
        "trainer.test_freq": a.test_freq, "trainer.save_freq": -1, "kernels": kernels,
    }
    cmd = [str(build / "bin/grpo-launch"), "run", "-p", "local-cpu", "--model", str(model),
           "--run-dir", str(run)]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    env = dict(os.environ, PATH=f"{build / 'bin'}:{os.environ.get('PATH', '')}")
    subprocess.run(cmd, check=True, env=env)
    events = [json.loads(l) for l in open(run / "events.jsonl") if l.strip()]
    rows = []
    for e in events:
        if e.get("type") == "step" and e.get("rank", 0) == 0:
            rows.append({"kernels": kernels, "step": e["step"],
                         "phase": e.get("phase"),
                         "sft_loss": e.get("sft_loss"), "reward_mean": e.get("reward_mean"),
                         "val_reward": e.get("val_reward"), "tokens_per_s": e.get("tokens_per_s"),
                         "peak_rss_mib": e.get("peak_rss_mib")})
        elif e.get("type") == "validation":
            rows.append({"kernels": kernels, "step": e.get("step"), "phase": "validation",
                         "val_reward": e.get("val_reward")})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--sft", type=int, default=200)
    ap.add_argument("--grpo", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--kernels", default="fused,reference")
    ap.add_argument("--test-freq", type=int, default=10)
    a = ap.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in a.kernels.split(","):
        rows += run_one(Path(a.build).resolve(), out, k, a)
    keys = ["kernels", "step", "phase", "sft_loss", "reward_mean", "val_reward", "tokens_per_s",
            "peak_rss_mib"]
    with open(out / "curve.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k) for k in keys})
    for r in rows:
        if r.get("val_reward") is not None:
            print(f"{r['kernels']:9s} step {r['step']:4d} val_reward {r['val_reward']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
