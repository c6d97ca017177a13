#!/usr/bin/python3
"""Per-rank cost of loading a Hugging Face checkpoint (docs/hf-checkpoints.md "Which rank reads
what"): starts WORLD grpo-trainer ranks (torchrun's environment, Gloo on loopback) on MODEL_DIR at
the layout asked for, with no training step (load, then the full weights' SHA-256, then exit), and
prints per rank its peak RSS (the kernel's ru_maxrss of the process, from wait4), the bytes and
peak RSS the loader logs (`rank R: loaded ... read B of T bytes, peak RSS M MiB`, absent in
builds before the per-rank reader) and the SHA-256 of the full weights, which must be the same at
every layout.

  bench/hf_load/run.py GRPO_TRAINER MODEL_DIR [--world 2] [--tp 1] [--ep 1] [--threads 1]
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile

LOG = re.compile(r"rank (\d+): loaded (\d+) of (\d+) tensors .* read (\d+) of (\d+) bytes, "
                 r"peak RSS ([\d.]+) MiB")
SHA = re.compile(r"weights sha256 ([0-9a-f]{64})")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trainer")
    ap.add_argument("model")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--ep", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="hf-load-") as run:
        procs, logs = [], []
        for r in range(a.world):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(a.world), LOCAL_RANK=str(r),
                       LOCAL_WORLD_SIZE=str(a.world), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), OMP_WAIT_POLICY="PASSIVE")
            cmd = [a.trainer, "--model", a.model, "--run-dir", run, "--log-level", "info",
                   "--set", "trainer.sft_warmup_steps=0", "--set", "trainer.total_training_steps=0",
                   "--set", "trainer.val_before_train=false", "--set", "trainer.test_freq=-1",
                   "--set", "trainer.save_freq=-1", "--set", f"trainer.threads={a.threads}",
                   "--set", "data.train_batch_size=2", "--set", "trainer.sft_batch_size=2",
                   "--set", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
                   "--set", "data.val_size=2",
                   "--set", f"actor_rollout_ref.actor.megatron.tensor_model_parallel_size={a.tp}",
                   "--set", f"actor_rollout_ref.actor.megatron.expert_model_parallel_size={a.ep}"]
            log = open(os.path.join(run, f"rank{r}.log"), "w+")
            procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT))
            logs.append(log)
        status = 0
        print(f"world {a.world}, TP={a.tp}, EP={a.ep}: {a.model}")
        print("| rank | peak RSS (ru_maxrss) | peak RSS after load | bytes read | of | weights SHA-256 |")
        print("|---|---|---|---|---|---|")
        for r, p in enumerate(procs):
            _, code, usage = os.wait4(p.pid, 0)
            logs[r].seek(0)
            text = logs[r].read()
            if code != 0:
                status = 1
                sys.stderr.write(f"rank {r} failed ({code}):\n{text[-3000:]}\n")
            m = LOG.search(text)
            sha = SHA.search(text)
            loaded = (f"{float(m.group(6)):.1f} MiB | {int(m.group(4)):,} | {int(m.group(5)):,}"
                      if m else "- | - | -")
            print(f"| {r} | {usage.ru_maxrss / 1024:.1f} MiB | {loaded} | "
                  f"{sha.group(1)[:16] if sha else '-'} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
