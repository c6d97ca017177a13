#!/usr/bin/python3
"""The learning curve of GRPO on a verl-format dataset (docs/datasets.md): a tiny random Qwen3
with the real tokenizer (scripts/make-tiny-qwen.py) trained by `grpo-launch run -p local-cpu` on
tests/data/gsm8k-style, SFT warm-start then GRPO, validated every few steps. Prints and writes
(OUT_DIR/curve.csv) the validation reward (verl's gsm8k score, greedy decoding, mean over the
validation records) against the step, with the train reward, the wall time since the start,
and the memory and tokens/s the trainer reported, for each `kernels` setting asked for. Not run
by the tests: tens of minutes on 2 cores (bench/dataset/RESULTS.md has the command and curve).

  bench/dataset/learning_curve.py BUILD_DIR OUT_DIR [--sft 60] [--grpo 10] [--hidden 64]
      [--kernels fused] [--test-freq 10] [--ranks 1] [--threads 2] [--sft-batch 16]
      [--sft-lr 5e-3] [--lr 1e-4] [--train-batch 8] [--n 4] [--val-size 32]
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
        "data.max_prompt_length": 64, "data.max_response_length": 56,
        "data.val_size": a.val_size, "data.train_batch_size": a.train_batch,
        "actor_rollout_ref.actor.ppo_mini_batch_size": a.train_batch,
        "actor_rollout_ref.rollout.n": a.n, "trainer.sft_warmup_steps": a.sft,
        "trainer.total_training_steps": a.grpo, "trainer.sft_batch_size": a.sft_batch,
        "trainer.sft_lr": a.sft_lr, "actor_rollout_ref.actor.optim.lr": a.lr,
        "trainer.test_freq": a.test_freq, "trainer.save_freq": -1, "kernels": kernels,
        "trainer.threads": a.threads,
    }
    # --hang-timeout: the floor of the calibrated hang limits; on a shared machine a phase may
    # take many times longer than when it was calibrated (docs/supervisor.md "Hang timeout").
    cmd = [str(build / "bin/grpo-launch"), "run", "-p", "local-cpu", "--model", str(model),
           "--run-dir", str(run), "--set", f"gpus_per_node={a.ranks}",
           "--hang-timeout", str(a.hang_timeout)]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    env = dict(os.environ, PATH=f"{build / 'bin'}:{os.environ.get('PATH', '')}")
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=env)
    events = [json.loads(l) for l in open(run / "events.jsonl") if l.strip()]
    start = events[0]["time"]
    rows = []
    for e in events:
        if e.get("source") != "trainer" or e.get("rank", 0) != 0:
            continue
        if e.get("type") == "step":
            rows.append({"kernels": kernels, "step": e["step"],
                         "phase": e.get("phase"), "wall_s": round(e["time"] - start, 1),
                         "sft_loss": e.get("sft_loss"), "reward_mean": e.get("reward_mean"),
                         "val_reward": e.get("val_reward"), "tokens_per_s": e.get("tokens_per_s"),
                         "peak_rss_mib": e.get("peak_rss_mib")})
        elif e.get("type") == "validation":
            rows.append({"kernels": kernels, "step": e.get("step"), "phase": "validation",
                         "wall_s": round(e["time"] - start, 1), "val_reward": e.get("val_reward")})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--sft", type=int, default=60)
    ap.add_argument("--grpo", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--kernels", default="fused")
    ap.add_argument("--test-freq", type=int, default=10)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sft-batch", type=int, default=16)
    ap.add_argument("--sft-lr", type=float, default=5e-3)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--train-batch", type=int, default=8)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--val-size", type=int, default=32)
    ap.add_argument("--hang-timeout", type=float, default=900)
    a = ap.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in a.kernels.split(","):
        rows += run_one(Path(a.build).resolve(), out, k, a)
    keys = ["kernels", "step", "phase", "wall_s", "sft_loss", "reward_mean", "val_reward",
            "tokens_per_s", "peak_rss_mib"]
    with open(out / "curve.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k) for k in keys})
    print("| kernels | step | phase | wall s | SFT loss | train reward | val reward |")
    print("|---|---|---|---|---|---|---|")
    fmt = lambda v, f: "" if v is None else format(v, f)
    for r in rows:
        print(f"| {r['kernels']} | {r['step']} | {r['phase']} | {fmt(r.get('wall_s'), '.0f')} | "
              f"{fmt(r.get('sft_loss'), '.3f')} | {fmt(r.get('reward_mean'), '.3f')} | "
              f"{fmt(r.get('val_reward'), '.3f')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
