#!/usr/bin/env python3
"""Memory per rank at each tested layout: what the planner estimates vs what grpo-trainer holds.

For tiny-moe on the local-cpu profile, at every (ranks, EP) below, this runs
  grpo-launch plan ... --set gpus_per_node=W --set tp=1 --set ep=E --set dp=W
      --set distributed_optimizer=false --format json
(the constraints `grpo-launch run` adds for the embedded trainer) and reads the per-device
training items "actor weights", "actor gradients" and "actor optimizer states" (GiB, turned back
into bytes), then starts W grpo-trainer ranks at that layout for one SFT step and reads each rank's
`layout` event (param_bytes, grad_bytes, optimizer_bytes). Prints a Markdown table; exits 1 when a
planner figure and a measured one differ.

Usage: bench/layouts/run.py [BUILD_DIR]   (default build/; python3's standard library only)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
LAUNCH = os.path.join(BUILD, "bin", "grpo-launch")
TRAINER = os.path.join(BUILD, "bin", "grpo-trainer")
CASES = [(2, 1), (2, 2), (4, 1), (4, 2), (4, 4)]
GIB = 1 << 30


def planner(world, ep):
    out = subprocess.run(
        [LAUNCH, "plan", "-p", "local-cpu", "-m", "tiny-moe", "--set", f"gpus_per_node={world}",
         "--set", "tp=1", "--set", f"ep={ep}", "--set", f"dp={world}", "--set",
         "distributed_optimizer=false", "--format", "json"],
        check=True, capture_output=True, text=True).stdout
    plan = json.loads(out)["plan"]
    items = plan["memory"]["training"]["items_gib"]
    return {k: round(items[v] * GIB) for k, v in (("param_bytes", "actor weights"),
                                                   ("grad_bytes", "actor gradients"),
                                                   ("optimizer_bytes", "actor optimizer states"))}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trainer(world, ep):
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        procs = []
        for r in range(world):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world),
                       LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       OMP_WAIT_POLICY="PASSIVE")
            env.pop("GRPO_FAULT", None)
            args = [TRAINER, "--model", "tiny-moe", "--run-dir", d, "--log-level", "warn",
                    "--set", "trainer.sft_warmup_steps=1", "--set", "trainer.total_training_steps=0",
                    "--set", "trainer.sft_batch_size=8", "--set", "data.val_size=8",
                    "--set", "trainer.threads=1", "--set", "trainer.save_freq=-1",
                    "--set", f"actor_rollout_ref.actor.megatron.expert_model_parallel_size={ep}"]
            procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True))
        events = []
        for p in procs:
            out, _ = p.communicate(timeout=600)
            if p.returncode != 0:
                sys.exit(f"grpo-trainer exited {p.returncode} at {world} ranks, EP={ep}")
            events += [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        return [e for e in events if e.get("type") == "layout"]


def main():
    print("| ranks | EP | item | planner (bytes per device) | measured (bytes per rank) | equal |")
    print("|---|---|---|---|---|---|")
    ok = True
    for world, ep in CASES:
        want = planner(world, ep)
        got = trainer(world, ep)
        for key in ("param_bytes", "grad_bytes", "optimizer_bytes"):
            values = sorted({e[key] for e in got})
            equal = values == [want[key]]
            ok &= equal
            print(f"| {world} | {ep} | {key} | {want[key]} | {', '.join(map(str, values))} | "
                  f"{'yes' if equal else 'NO'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
