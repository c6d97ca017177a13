#!/usr/bin/env python3
"""Recovery time after kill -9 of one rank, grpo-launch vs torchrun --max_restarts, and hang
detection latency (bench/recovery/RESULTS.md).

usage: bench/recovery/run.py [--launch build/bin/grpo-launch]
                             [--trainer build/bin/grpo-trainer] [--repeats 5]
                             [--only ours,torchrun,hang] [--json results.json]

Workload (both sides): a GRPO-like step of a d=128, 2-layer, vocab-64 decoder, 4 prompts x 2
responses of 4 new tokens per step over 2 ranks x 1 thread, gloo, a checkpoint every 5 steps.
The driver waits until rank 1 completed step 12, kills it with SIGKILL and measures until the
first completed step after the resume from step 10 (step 11).

ours:      grpo-launch run --profile local-cpu --model bench/recovery/bench-dense.toml
           (grpo-trainer, --backoff 0); times from the event log (the supervisor's and the
           trainer's own timestamps).
torchrun:  /usr/bin/torchrun --nproc_per_node=2 --max_restarts=3 --monitor_interval=0.1
           --redirects=2 --tee=2 --log_dir=DIR bench/recovery/py_trainer.py (Debian's
           python3-torch 1.13.1; the underscore flags and the log flags are required there).
hang:      grpo-launch with --hang-timeout 2; rank 1 is SIGSTOPped after step 12; latency from
           the SIGSTOP to the supervisor's failure event.

Needs: scripts/install-deps.sh --bench (python3-torch: /usr/bin/torchrun and torch for the
torchrun baseline; `--only ours` and `--only hang` need none of it) and built grpo-launch and
grpo-trainer.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KILL_AFTER = 12

OURS_SETS = [
    "trainer.sft_warmup_steps=0", "trainer.total_training_steps=20", "trainer.save_freq=5",
    "trainer.test_freq=-1", "trainer.val_before_train=false", "data.val_size=8",
    "data.train_size=256", "data.train_batch_size=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4", "actor_rollout_ref.rollout.n=2",
    "actor_rollout_ref.actor.ppo_epochs=1", "data.max_response_length=4",
    "trainer.threads=1", "trainer.heartbeat_interval_s=0.5",
]


def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    except FileNotFoundError:
        pass
    return out


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = pred()
        if r:
            return r
        time.sleep(0.002)
    raise RuntimeError(f"timed out waiting for {what}")


def ours_cmd(args, run_dir, extra=()):
    cmd = [args.launch, "--log-level", "warn", "run", "--profile", "local-cpu", "--model",
           os.path.join(HERE, "bench-dense.toml"), "--run-dir", run_dir, "--backoff", "0"]
    for s in OURS_SETS:
        cmd += ["--set", s]
    return cmd + list(extra)


def ours_env(args):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(args.trainer)) + ":" + env["PATH"]
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def rank1_step(run_dir, attempt, step):
    for e in read_jsonl(os.path.join(run_dir, "events.jsonl")):
        if (e["type"] == "step" and e.get("attempt") == attempt and e.get("rank") == 1
                and e["step"] >= step):
            return True
    return False


def pid_of(run_dir, attempt, rank):
    for e in read_jsonl(os.path.join(run_dir, "events.jsonl")):
        if e["type"] == "start" and e.get("attempt") == attempt and e.get("rank") == rank:
            return e["pid"]
    return None


def signal_rank1(args, tmp, sig, extra=()):
    """Runs grpo-launch in tmp/run until it ends; `sig` goes to rank 1 once it completed step
    KILL_AFTER. Returns the time of the signal and the run's events."""
    run_dir = os.path.join(tmp, "run")
    p = subprocess.Popen(ours_cmd(args, run_dir, extra), env=ours_env(args),
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "stderr"), "w"))
    try:
        wait_for(lambda: rank1_step(run_dir, 1, KILL_AFTER), 120, f"step {KILL_AFTER}")
        pid = pid_of(run_dir, 1, 1)
        t_signal = time.time()
        os.kill(pid, sig)
        if p.wait(timeout=180) != 0:
            raise RuntimeError(f"grpo-launch exited {p.returncode}: {open(tmp + '/stderr').read()}")
    finally:
        if p.poll() is None:
            p.kill()
    return t_signal, read_jsonl(os.path.join(run_dir, "events.jsonl"))


def one_ours(args):
    tmp = tempfile.mkdtemp(prefix="grpo-rec-")
    t_kill, ev = signal_rank1(args, tmp, signal.SIGKILL)

    def first(pred):
        return next(e for e in ev if pred(e))

    stop = first(lambda e: e["type"] == "state" and e["to"] == "stopping")
    ended = first(lambda e: e["type"] == "attempt_ended" and e["attempt"] == 1)
    started = first(lambda e: e["type"] == "attempt_started" and e["attempt"] == 2)
    starts = [e for e in ev if e["type"] == "start" and e.get("attempt") == 2]
    loaded = [e for e in ev if e["type"] == "checkpoint_loaded" and e.get("attempt") == 2]
    step = first(lambda e: e["type"] == "step" and e.get("attempt") == 2 and e["rank"] == 0)
    assert step["step"] == 11 and all(e["step"] == 10 for e in loaded), "did not resume from 10"
    # Trainer times are the ranks' own clocks (same machine); the latest rank decides.
    rdzv_begin = max(e["trainer_time"] - e["rendezvous_s"] for e in starts)
    rdzv_end = max(e["trainer_time"] for e in starts)
    load_end = max(e["trainer_time"] for e in loaded)
    r = {
        "detection": stop["time"] - t_kill,
        "teardown": ended["time"] - stop["time"],
        "relaunch": started["time"] - ended["time"],
        "start-up": rdzv_begin - started["time"],
        "rendezvous": rdzv_end - rdzv_begin,
        "checkpoint load": load_end - rdzv_end,
        "first step": step["trainer_time"] - load_end,
        "total": step["trainer_time"] - t_kill,
    }
    subprocess.run(["rm", "-rf", tmp])
    return r


def one_torchrun(args):
    tmp = tempfile.mkdtemp(prefix="grpo-rec-py-")
    logs = os.path.join(tmp, "logs")
    os.makedirs(logs)
    env = dict(os.environ, BENCH_LOG=logs, BENCH_CKPT=os.path.join(tmp, "ckpt"),
               BENCH_STEPS="20", OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS="1")
    cmd = ["/usr/bin/torchrun", "--nproc_per_node=2", "--max_restarts=3", "--monitor_interval=0.1",
           "--redirects=2", "--tee=2", "--log_dir=" + os.path.join(tmp, "tl"),
           os.path.join(HERE, "py_trainer.py")]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path1 = os.path.join(logs, "rank-1.jsonl")
    path0 = os.path.join(logs, "rank-0.jsonl")
    try:
        def at12():
            for e in read_jsonl(path1):
                if e["event"] == "step" and e["step"] >= KILL_AFTER:
                    return e
            return None
        wait_for(at12, 180, "step 12")
        pid = [e for e in read_jsonl(path1) if e["event"] == "proc_start"][-1]["pid"]
        t_kill = time.time()
        os.kill(pid, signal.SIGKILL)
        if p.wait(timeout=240) != 0:
            raise RuntimeError(f"torchrun exited {p.returncode}")
    finally:
        if p.poll() is None:
            p.kill()
    ev = [e for e in read_jsonl(path0) + read_jsonl(path1) if e["t"] > t_kill]

    def last(kind):  # the slower rank
        return max(e["t"] for e in ev if e["event"] == kind)

    proc = last("proc_start")
    imported = last("imported")
    pg = last("pg_ready")
    loaded = last("ckpt_loaded")
    step = min(e["t"] for e in ev if e["event"] == "step" and e["step"] == 11)
    r = {
        "kill -> new worker process": proc - t_kill,
        "import torch": imported - proc,
        "rendezvous": pg - imported,
        "checkpoint load": loaded - pg,
        "first step": step - loaded,
        "total": step - t_kill,
    }
    subprocess.run(["rm", "-rf", tmp])
    return r


def one_hang(args):
    tmp = tempfile.mkdtemp(prefix="grpo-hang-")
    t_stop, ev = signal_rank1(args, tmp, signal.SIGSTOP, ["--hang-timeout", "2"])
    f = next(e for e in ev if e["type"] == "failure")
    assert f["class"] == "hang", f
    subprocess.run(["rm", "-rf", tmp])
    return {"timeout": f["timeout_s"], "detected after SIGSTOP": f["time"] - t_stop,
            "silence at detection": f["silent_s"]}


def table(name, runs):
    keys = list(runs[0].keys())
    print(f"\n{name} ({len(runs)} runs): seconds, min / median / max")
    for k in keys:
        v = [r[k] for r in runs]
        print(f"  {k:28s} {min(v):6.3f} / {statistics.median(v):6.3f} / {max(v):6.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launch", default=os.path.join(ROOT, "build/bin/grpo-launch"))
    ap.add_argument("--trainer", default=os.path.join(ROOT, "build/bin/grpo-trainer"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", help="comma-separated: ours, torchrun, hang (default: all)")
    ap.add_argument("--json")
    a = ap.parse_args()
    results = {}
    for name, fn in (("ours", one_ours), ("torchrun", one_torchrun), ("hang", one_hang)):
        if a.only and name not in a.only.split(","):
            continue
        runs = []
        for i in range(a.repeats):
            runs.append(fn(a))
            print(f"{name} run {i + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in runs[-1].items()),
                  flush=True)
        results[name] = runs
        table(name, runs)
    if "ours" in results and "torchrun" in results:
        o = statistics.median(r["total"] for r in results["ours"])
        t = statistics.median(r["total"] for r in results["torchrun"])
        print(f"\nmedian total: ours {o:.3f} s, torchrun {t:.3f} s: ours / torchrun = {o / t:.2f} "
              f"(goal <= 0.33)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
