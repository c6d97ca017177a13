#!/usr/bin/env python3
"""Chaos run: a local supervised training run of several minutes with a random fault every
30-60 s, which must still complete (bench/chaos/RESULTS.md). Not part of ctest.

usage: bench/chaos/chaos.py [--launch build/bin/grpo-launch]
                            [--trainer build/bin/grpo-trainer] [--steps 400] [--seed 1]
                            [--min-gap 30] [--max-gap 60] [--ooms 1] [--hangs 0]
                            [--save-freq auto|N] [--hang-timeout 5] [--keep DIR]

The run: grpo-launch run --profile local-cpu --model tiny-moe, 2 ranks, --hang-timeout 5,
--max-restarts 100, --backoff 0.5, trainer.save_freq=auto (the local-cpu profile extended with
node_mtbf_hours = the mean fault gap, the prior a user who knows the failure rate would write). Faults from outside, one every U(min-gap, max-gap) seconds:
  kill9    SIGKILL to a random rank
  stop     SIGSTOP to a random rank (a hang; the supervisor must detect and kill it)
  corrupt  flip bytes in the newest checkpoint's model.safetensors, then SIGKILL a rank (the
           resume must skip the corrupt checkpoint and take the one before)
  slow     SIGSTOP a rank for 2 s, then SIGCONT (a hiccup that must not count as a hang)
and, injected through the trainer at random steps when the run starts: --ooms x oom (OOM_ERROR in
the update: the micro batch is halved; at most 4, the micro batch is 16), torn_ckpt (a crash while
writing a checkpoint; only with a fixed --save-freq, whose save steps are known) and --hangs x hang (one rank stops in its step while the other waits in a
collective: a hung collective, found by the hang timeout).
At the end the event log is checked (tests/integration/check_supervised.py) and summarised.

Needs: scripts/install-deps.sh --bench and built grpo-launch and grpo-trainer; python3's standard
library only.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def read_events(run_dir):
    out = []
    try:
        with open(os.path.join(run_dir, "events.jsonl")) as f:
            for line in f:
                if line.endswith("\n"):
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def current_pids(run_dir):
    ev = read_events(run_dir)
    attempts = [e["attempt"] for e in ev if e["type"] == "attempt_started"]
    if not attempts:
        return {}
    a = attempts[-1]
    return {e["rank"]: e["pid"] for e in ev if e["type"] == "start" and e.get("attempt") == a}


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def per_fault(ev):
    """Each failure's lost time, folded from the event log here (a second implementation beside
    the supervisor's Goodput: the totals must agree), with the checkpoint interval it fell in.

    detection   the last step of rank 0 before the failure -> the failure event;
    restart     the failure -> the start of the next step (its `wall_s` before the step event);
    recomputed  the newest checkpoint (or attempt start, or end of the previous recovery) -> the
                last step before the failure: the completed work the failure threw away;
    interval    the checkpoint interval in effect, in seconds as it ran: the `interval_steps` of
                the newest `save_interval` choice times the mean wall time of the steps run
                since that save (the step before it when none ran), plus the save's cost.
    A failure is a new one only when the previous one has recovered (a step ran since)."""
    out = []
    last_step = work_since = 0.0
    open_fault = None
    interval_steps, save_cost, since_save = None, 0.0, []
    prev_wall = None
    for e in ev:
        t, ty = e["time"], e["type"]
        if ty == "attempt_started":
            work_since = max(work_since, t)
            since_save = []
        elif ty == "checkpoint_saved":
            work_since = max(work_since, t)
            since_save = []
            save_cost = e.get("blocking_s", e.get("seconds", 0.0))
        elif ty == "save_interval" and e.get("rank", 0) == 0:
            interval_steps = e.get("interval_steps")
        elif ty == "step" and e.get("rank", 0) == 0:
            wall = e.get("wall_s", e.get("step_s", 0.0))
            if open_fault is not None:
                began = min(max(t - wall, open_fault["time"]), t)
                open_fault["restart_s"] = began - open_fault["time"]
                work_since = max(work_since, began)
                open_fault = None
            last_step = t
            since_save.append(wall)
            prev_wall = wall
        elif ty == "failure":
            if open_fault is not None:
                continue
            last = max(last_step, work_since)
            step_s = (sum(since_save) / len(since_save)) if since_save else (prev_wall or 0.0)
            f = {"time": t, "class": e.get("class"),
                 "detection_s": max(0.0, t - last),
                 "recomputed_s": max(0.0, last_step - work_since),
                 "restart_s": 0.0,
                 "interval_s": (interval_steps or 0) * step_s + save_cost}
            out.append(f)
            open_fault = f
    return out


def report_per_fault(ev, status_json):
    faults = per_fault(ev)
    if not faults:
        return
    n = len(faults)
    tot = {k: sum(f[k] for f in faults) for k in ("detection_s", "restart_s", "recomputed_s",
                                                   "interval_s")}
    lost = tot["detection_s"] + tot["restart_s"] + tot["recomputed_s"]
    bound = tot["detection_s"] + tot["restart_s"] + tot["interval_s"] / 2
    print(f"chaos: per fault ({n}): detection {tot['detection_s'] / n:.2f} s, restart "
          f"{tot['restart_s'] / n:.2f} s, recomputed {tot['recomputed_s'] / n:.2f} s, "
          f"half the interval in effect {tot['interval_s'] / n / 2:.2f} s")
    print(f"chaos: lost per fault {lost / n:.2f} s "
          f"{'<=' if lost <= bound else '>'} detection + restart + half the interval "
          f"{bound / n:.2f} s")
    g = (status_json or {}).get("goodput") or {}
    if g:
        print(f"chaos: supervisor's totals: detection {g.get('detection_s', 0):.1f} s, "
              f"recomputed {g.get('recomputed_s', 0):.1f} s; this fold: detection "
              f"{tot['detection_s']:.1f} s, recomputed {tot['recomputed_s']:.1f} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launch", default=os.path.join(ROOT, "build/bin/grpo-launch"))
    ap.add_argument("--trainer", default=os.path.join(ROOT, "build/bin/grpo-trainer"))
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-gap", type=float, default=30)
    ap.add_argument("--max-gap", type=float, default=60)
    ap.add_argument("--ooms", type=int, default=1)
    ap.add_argument("--hangs", type=int, default=0)
    ap.add_argument("--save-freq", default="auto",
                    help="trainer.save_freq: auto (the Young-Daly interval; the profile's prior "
                         "MTBF is set to the mean fault gap) or a step count")
    ap.add_argument("--hang-timeout", default="5",
                    help="grpo-launch --hang-timeout: the floor of the calibrated hang limits "
                         "(the 2 s `slow` hiccups must stay below it)")
    ap.add_argument("--keep")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = a.keep or tempfile.mkdtemp(prefix="grpo-chaos-")
    os.makedirs(tmp, exist_ok=True)
    run_dir = os.path.join(tmp, "run")
    sft = a.steps // 2
    # GRPO steps (an OOM fault is in the update); distinct steps, drawn in this order.
    oom_steps = sorted(rng.sample(range(sft + 1, a.steps - 20), min(4, a.ooms)))
    # A torn checkpoint needs a step that is saved: only with a fixed interval (under "auto"
    # the save steps depend on the measured costs; the external `corrupt` fault remains).
    torn_step = None
    if a.save_freq != "auto":
        freq = int(a.save_freq)
        torn_step = rng.randint(2, a.steps // freq - 1) * freq
    hang_steps = sorted(rng.sample(range(20, a.steps - 20), a.hangs))
    trainer_faults = [f"oom@step={s},phase=update" for s in oom_steps]
    if torn_step is not None:
        trainer_faults.append(f"torn_ckpt@step={torn_step}")
    trainer_faults += [f"hang@step={s},rank={rng.randint(0, 1)}" for s in hang_steps]
    # The cluster profile's prior failure rate is the rate this benchmark injects (as a user who
    # knows their cluster would write it): local-cpu with node_mtbf_hours = the mean fault gap.
    profiles = os.path.join(tmp, "profiles")
    os.makedirs(os.path.join(profiles, "clusters"), exist_ok=True)
    with open(os.path.join(profiles, "clusters", "chaos-cpu.toml"), "w") as f:
        f.write('name = "chaos-cpu"\nextends = "local-cpu"\n'
                f"node_mtbf_hours = {(a.min_gap + a.max_gap) / 2 / 3600:.6f}\n")
    cmd = [a.launch, "--log-level", "info", "--profile-dir", profiles, "run",
           "--profile", "chaos-cpu", "--model", "tiny-moe",
           "--run-dir", run_dir, "--hang-timeout", a.hang_timeout, "--max-restarts", "100",
           "--no-progress-restarts", "10", "--backoff", "0.5",
           "--set", f"trainer.sft_warmup_steps={sft}",
           "--set", f"trainer.total_training_steps={a.steps - sft}",
           "--set", f"trainer.save_freq={a.save_freq}", "--set", "trainer.test_freq=50",
           "--set", "trainer.threads=1"]
    for f in trainer_faults:
        cmd += ["--fault", f]
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(a.trainer)) + ":" + env["PATH"]
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    t0 = time.time()
    log = open(os.path.join(tmp, "chaos.log"), "w")
    p = subprocess.Popen(cmd, env=env, stdout=open(os.path.join(tmp, "stdout"), "w"),
                         stderr=open(os.path.join(tmp, "stderr"), "w"))
    injected = []
    print(f"chaos: run dir {run_dir}; trainer faults {', '.join(trainer_faults)}", flush=True)
    next_at = time.time() + rng.uniform(a.min_gap, a.max_gap)
    while p.poll() is None:
        time.sleep(0.2)
        if time.time() < next_at:
            continue
        next_at = time.time() + rng.uniform(a.min_gap, a.max_gap)
        pids = {r: pid for r, pid in current_pids(run_dir).items() if alive(pid)}
        if not pids:
            continue  # between attempts: try again at the next slot
        kind = rng.choice(["kill9", "kill9", "stop", "corrupt", "slow"])
        rank = rng.choice(sorted(pids))
        pid = pids[rank]
        t = time.time() - t0
        try:
            if kind == "kill9":
                os.kill(pid, signal.SIGKILL)
            elif kind == "stop":
                os.kill(pid, signal.SIGSTOP)
            elif kind == "slow":
                os.kill(pid, signal.SIGSTOP)
                time.sleep(2)
                os.kill(pid, signal.SIGCONT)
            elif kind == "corrupt":
                ck = os.path.join(run_dir, "checkpoints")
                steps = sorted(n for n in os.listdir(ck) if n.startswith("step_"))
                if steps:
                    f = os.path.join(ck, steps[-1], "model.safetensors")
                    with open(f, "r+b") as fh:
                        fh.seek(4096)
                        fh.write(os.urandom(64))
                    kind = f"corrupt {steps[-1]} + kill9"
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, FileNotFoundError, OSError) as e:
            kind += f" (missed: {e})"
        injected.append((round(t, 1), kind, rank))
        print(f"chaos: t={t:6.1f}s {kind} rank {rank} (pid {pid})", flush=True)
        log.write(f"{t:.1f} {kind} rank {rank} pid {pid}\n")
        log.flush()
    wall = time.time() - t0
    rc = p.returncode
    ev = read_events(run_dir)
    failures = [e["class"] for e in ev if e["type"] == "failure"]
    decisions = [e["kind"] for e in ev if e["type"] == "decision"]
    rem = [e["what"] for e in ev if e["type"] == "remediation"]
    skipped = [e["path"] for e in ev if e["type"] == "checkpoint_skipped"]
    attempts = sum(1 for e in ev if e["type"] == "attempt_started")
    print(f"\nchaos: exit {rc} after {wall:.0f} s; {len(injected)} external faults + "
          f"{len(trainer_faults)} trainer faults; {attempts} attempts")
    print(f"chaos: failures {failures}")
    print(f"chaos: decisions {decisions}; remediation {rem}; checkpoints skipped {skipped}")
    check = subprocess.run([sys.executable, os.path.join(ROOT, "tests/integration/check_supervised.py"),
                            run_dir, "--allow", "crash", "--allow", "hang", "--allow", "oom",
                            "--allow", "comm", "--summary"], capture_output=True, text=True)
    print(check.stdout + check.stderr, end="")
    status = subprocess.run([a.launch, "status", run_dir], capture_output=True, text=True)
    print(status.stdout, end="")
    sj = subprocess.run([a.launch, "status", run_dir, "--format", "json"], capture_output=True,
                        text=True)
    try:
        report_per_fault(ev, {"goodput": json.loads(sj.stdout).get("lost_by_cause")})
    except ValueError:
        report_per_fault(ev, None)
    return 0 if rc == 0 and check.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
