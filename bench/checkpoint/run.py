#!/usr/bin/env python3
"""Checkpoint cost to the training loop: synchronous vs asynchronous saves of grpo-trainer, side
by side on this machine (bench/checkpoint/RESULTS.md; docs/checkpoint-format.md "Asynchronous
saves").

usage: bench/checkpoint/run.py [--trainer build/bin/grpo-trainer] [--ranks 1] [--steps 12]
                               [--save-freq 2] [--repeats 2] [--json results.json]

Workload: bench/checkpoint/bench-ckpt.toml (12.6 M parameters; a GRPO checkpoint holds the
weights, two AdamW moments and the reference: 4 x 50 MB), SFT-free GRPO steps of 4 prompts x 2
responses, a checkpoint every --save-freq steps, 1 thread per rank. Each repeat runs the sync
and the async configuration one after the other (alternating which goes first), each in a
fresh run directory under $TMPDIR, and reads every periodic `checkpoint_saved` event of rank 0:

  blocking_s  the training loop was stopped (sync: the whole save)
  write_s     serialize + SHA-256 + write + fsync + commit (async: in the background thread)

and the median step wall time right after a save (async: a write in flight) and otherwise.
Goal (issue 14 item 5): the async median blocking time <= 10% of the sync median save time,
printed over all periodic saves and over the later ones (each run's first asynchronous save
allocates the host buffers every later one reuses). The final save is synchronous in both
configurations and is left out.

Needs a built grpo-trainer only.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_trainer(args, run_dir, async_save):
    sets = [
        "trainer.sft_warmup_steps=0", f"trainer.total_training_steps={args.steps}",
        f"trainer.save_freq={args.save_freq}", f"trainer.async_save={str(async_save).lower()}",
        "trainer.max_ckpt_to_keep=2", "trainer.test_freq=-1", "trainer.val_before_train=false",
        "data.val_size=8", "data.train_size=256", f"data.train_batch_size={4 * args.ranks}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={4 * args.ranks}",
        "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.actor.ppo_epochs=1",
        "data.max_response_length=4", "trainer.threads=1",
    ]
    cmd = [args.trainer, "--model", os.path.join(HERE, "bench-ckpt.toml"), "--run-dir", run_dir,
           "--log-level", "warn"]
    for s in sets:
        cmd += ["--set", s]
    port = free_port()
    procs = []
    os.makedirs(run_dir, exist_ok=True)
    for r in range(args.ranks):
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                  "MASTER_PORT", "PMIX_NAMESPACE", "GRPO_FAULT"):
            env.pop(v, None)
        if args.ranks > 1:
            env.update(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.ranks),
                       LOCAL_WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port))
        out = open(os.path.join(run_dir, f"rank{r}.stdout"), "w")
        err = open(os.path.join(run_dir, f"rank{r}.stderr"), "w")
        procs.append(subprocess.Popen(cmd, stdout=out, stderr=err, env=env))
    codes = [p.wait() for p in procs]
    if any(codes):
        with open(os.path.join(run_dir, "rank0.stderr")) as f:
            sys.exit(f"grpo-trainer failed ({codes}):\n{f.read()[-2000:]}")
    events = []
    with open(os.path.join(run_dir, "rank0.stdout")) as f:
        for line in f:
            if line.strip():
                events.append(json.loads(line))
    return events


def summarize(events):
    saves = [e for e in events if e["type"] == "checkpoint_saved" and e["reason"] == "periodic"]
    steps = {e["step"]: e["wall_s"] for e in events if e["type"] == "step"}
    # A step overlaps a background write when it follows a periodic save (the write of step s
    # runs during step s + 1 at these sizes).
    saved_steps = {e["step"] for e in saves}
    after = [w for s, w in steps.items() if s - 1 in saved_steps]
    other = [w for s, w in steps.items() if s - 1 not in saved_steps and s > 1]
    return {
        "blocking_s": [e["blocking_s"] for e in saves],
        "write_s": [e["write_s"] for e in saves],
        "seconds": [e["seconds"] for e in saves],
        "bytes": saves[0]["bytes"] if saves else 0,
        "step_after_save_s": after,
        "step_other_s": other,
    }


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trainer", default=os.path.join(ROOT, "build", "bin", "grpo-trainer"))
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--save-freq", type=int, default=2)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--json", help="write every measurement here")
    p.add_argument("--keep", action="store_true", help="keep the run directories")
    args = p.parse_args()
    if not os.access(args.trainer, os.X_OK):
        sys.exit(f"{args.trainer}: not an executable (build grpo-trainer, or pass --trainer)")
    base = tempfile.mkdtemp(prefix="grpo-bench-ckpt-")
    results = {"sync": [], "async": []}
    t0 = time.time()
    for rep in range(args.repeats):
        order = [False, True] if rep % 2 == 0 else [True, False]
        for async_save in order:
            name = "async" if async_save else "sync"
            run_dir = os.path.join(base, f"{name}-{rep}")
            results[name].append(summarize(run_trainer(args, run_dir, async_save)))
            if not args.keep:
                shutil.rmtree(run_dir, ignore_errors=True)
    agg = {}
    for name, runs in results.items():
        agg[name] = {k: [x for r in runs for x in r[k]]
                     for k in ("blocking_s", "write_s", "seconds", "step_after_save_s",
                               "step_other_s")}
        agg[name]["bytes"] = runs[0]["bytes"]
    # Later saves: every periodic save but each run's first (the first asynchronous save
    # allocates the reused host buffers).
    for name, runs in results.items():
        agg[name]["later_blocking_s"] = [x for r in runs for x in r["blocking_s"][1:]]
    sync_save = med(agg["sync"]["seconds"])
    async_block = med(agg["async"]["blocking_s"])
    print(f"bench/checkpoint: {args.ranks} rank(s), {args.steps} steps, a save every "
          f"{args.save_freq}, {args.repeats} repeat(s), checkpoint {agg['sync']['bytes'] / 1e6:.1f}"
          f" MB, {time.time() - t0:.0f} s")
    print(f"{'':8} {'saves':>5} {'blocking_s median':>18} {'(min..max)':>16} "
          f"{'write_s median':>15} {'step after save':>16} {'other steps':>12}")
    for name in ("sync", "async"):
        a = agg[name]
        print(f"{name:8} {len(a['blocking_s']):>5} {med(a['blocking_s']):>18.4f} "
              f"{'(' + format(min(a['blocking_s']), '.3f') + '..' + format(max(a['blocking_s']), '.3f') + ')':>16} "
              f"{med(a['write_s']):>15.4f} {med(a['step_after_save_s']):>16.4f} "
              f"{med(a['step_other_s']):>12.4f}")
    ratio = async_block / sync_save
    print(f"all saves:   async blocking / sync save = {async_block:.4f} / {sync_save:.4f} = "
          f"{ratio:.3f} (goal <= 0.10: {'met' if ratio <= 0.10 else 'NOT met'})")
    later = med(agg["async"]["later_blocking_s"]) / med(agg["sync"]["later_blocking_s"])
    print(f"later saves: async blocking / sync save = "
          f"{med(agg['async']['later_blocking_s']):.4f} / "
          f"{med(agg['sync']['later_blocking_s']):.4f} = {later:.3f} "
          f"(goal <= 0.10: {'met' if later <= 0.10 else 'NOT met'}; "
          f"first async saves: {[round(r['blocking_s'][0], 3) for r in results['async']]})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "runs": results, "ratio": ratio, "later_ratio": later},
                  f, indent=1)
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
