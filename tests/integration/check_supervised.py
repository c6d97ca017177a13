#!/usr/bin/env python3
"""Checks a supervised run directory's event log (docs/events.md) after a fault test.

usage: check_supervised.py RUN_DIR [--exit CODE] [--sha SHA] [--failure CLASS]... [--allow CLASS]...
                           [--attempts N] [--world-size N] [--excluded NODE] [--replanned NODES]
                           [--layout KEY=VALUE]... [--layout-events N] [--step-bytes KIND]...
                           [--summary]

- the log is whole JSON lines with increasing seq, and ends with run_finished{exit_code: CODE}
  (default 0);
- every `failure` event's class is among the --failure and --allow classes, and each --failure
  class occurred;
- --attempts: at least this many attempts;
- no step lost beyond the last checkpoint: every attempt after the first resumes from the newest
  checkpoint saved before it started (attempt_started.resume_step), its ranks load exactly that
  checkpoint (checkpoint_loaded.step) and its first completed step is the next one;
- on success, the ranks of the last attempt all report `done` with one weights_sha256, equal to
  --sha when given, and every step 1..total was completed at least once;
- --world-size: the last attempt's world size;
- --excluded NODE: NODE was taken out of the run, by a decision that excludes it (Slurm declared
  it lost first) or by the health step before the next attempt (`node_unhealthy`, excluded), and
  the last attempt runs without it (its `excluded` is exactly [NODE]).
- --replanned NODES: every rank of the first attempt ran plan.json's layout (TP, PP, EP) and every
  rank of the last attempt the layout re-planned for NODES nodes (supervisor.json `replans`, the
  verl keys the supervisor passes), with DP = its world size / (TP x PP).
- --layout KEY=VALUE: every rank's `layout` event has KEY equal to VALUE (JSON: 2, true, "1f1b",
  [[0, 1], [1, 4]]); --layout-events N: there are exactly N of them (one per rank and attempt);
- --step-bytes KIND: every `step` event's comm_bytes has bytes of KIND ("pp.send").
--summary prints a one-line summary (attempts, failures, decisions, lost time) on success.
Prints every problem and exits 1 when there is any.
"""
import argparse
import json
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--sha")
    ap.add_argument("--failure", action="append", default=[])
    ap.add_argument("--allow", action="append", default=[],
                    help="a failure class that may occur but need not")
    ap.add_argument("--attempts", type=int, default=1)
    ap.add_argument("--world-size", type=int)
    ap.add_argument("--excluded", help="a node that must have been excluded")
    ap.add_argument("--replanned", type=int, metavar="NODES",
                    help="the last attempt ran the layout re-planned for NODES nodes")
    ap.add_argument("--layout", action="append", default=[], metavar="KEY=VALUE",
                    help="every rank's layout event has KEY = VALUE (JSON)")
    ap.add_argument("--layout-events", type=int, metavar="N")
    ap.add_argument("--step-bytes", action="append", default=[], metavar="KIND",
                    help="every step event's comm_bytes has bytes of KIND")
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    problems = []
    path = f"{a.run_dir}/events.jsonl"
    events = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                problems.append(f"{path}:{n}: torn last line")
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as e:
                problems.append(f"{path}:{n}: not JSON: {e}")
    seqs = [e.get("seq") for e in events]
    if seqs != sorted(seqs) or len(set(seqs)) != len(seqs):
        problems.append("seq is not strictly increasing")

    fin = [e for e in events if e["type"] == "run_finished"]
    if not fin:
        problems.append("no run_finished event")
    elif fin[-1]["exit_code"] != a.exit:
        problems.append(f"run_finished exit_code {fin[-1]['exit_code']}, expected {a.exit}")

    classes = [e["class"] for e in events if e["type"] == "failure"]
    for c in classes:
        if c not in a.failure and c not in a.allow:
            problems.append(f"unexpected failure class {c!r} (expected one of {a.failure})")
    for c in a.failure:
        if c not in classes:
            problems.append(f"no failure of class {c!r} (saw {classes})")

    attempts = [e for e in events if e["type"] == "attempt_started"]
    if len(attempts) < a.attempts:
        problems.append(f"{len(attempts)} attempt(s), expected at least {a.attempts}")

    # No step lost beyond the last checkpoint.
    newest = -1
    current = None
    first_step = {}
    loaded = {}
    saved = set()  # checkpoint steps known so far
    skipped = set()  # checkpoints the trainer refused (corrupt, torn): resume from the one before
    expected = {}  # attempt -> the checkpoint it must load
    loaded_steps = {(e.get("attempt"), e["step"]) for e in events if e["type"] == "checkpoint_loaded"}
    for e in events:
        t = e["type"]
        if t == "attempt_started":
            # A checkpoint_saved line can be lost when srun is torn down right after the save
            # (a node loss) or a rank is killed between its commit and its event; the trainer
            # loading it, or the directory being there, proves the checkpoint exists.
            r = e["resume_step"]
            on_disk = r >= 0 and (os.path.isdir(f"{a.run_dir}/checkpoints/step_{r:08d}") or
                                  (e["attempt"], r) in loaded_steps)
            if r < newest or (r > newest and not on_disk):
                problems.append(f"attempt {e['attempt']} resumes from {r}, "
                                f"the newest checkpoint saved before it is {newest}")
            newest = max(newest, r)
            current = e["attempt"]
            if r >= 0:
                saved.add(r)
            expected[current] = r
        elif t == "checkpoint_skipped" and e.get("attempt") == current:
            step = int(os.path.basename(e["path"].rstrip("/")).split("_")[-1])
            skipped.add(step)
            good = [x for x in saved if x <= expected[current] and x not in skipped]
            expected[current] = max(good, default=-1)
        elif t == "checkpoint_saved":
            newest = max(newest, e["step"])
            saved.add(e["step"])
        elif t == "checkpoint_loaded" and e.get("attempt") == current:
            loaded.setdefault(current, set()).add(e["step"])
        elif t == "step" and e.get("attempt") == current:
            first_step.setdefault(current, e["step"])
    for e in attempts:
        n = e["attempt"]
        resume = expected.get(n, e["resume_step"])
        if n in first_step and first_step[n] != max(resume, 0) + 1:
            problems.append(f"attempt {n}: first step {first_step[n]}, expected {resume + 1}")
        if resume >= 0 and n in first_step and loaded.get(n) != {resume}:
            problems.append(f"attempt {n}: loaded checkpoints {loaded.get(n)}, expected {{{resume}}}")

    layouts = [e for e in events if e["type"] == "layout"]
    if a.layout_events is not None and len(layouts) != a.layout_events:
        problems.append(f"{len(layouts)} layout event(s), expected {a.layout_events}")
    if a.layout and not layouts:
        problems.append("no layout event")
    for item in a.layout:
        key, _, raw = item.partition("=")
        want = json.loads(raw)
        for e in layouts:
            if e.get(key) != want:
                problems.append(f"rank {e.get('rank')}'s layout {key} = {e.get(key)!r}, "
                                f"expected {want!r}")
    steps = [e for e in events if e["type"] == "step"]
    for kind in a.step_bytes:
        if not steps or any(s.get("comm_bytes", {}).get(kind, 0) <= 0 for s in steps):
            problems.append(f"a step event without {kind} bytes (or no step event)")

    last = attempts[-1] if attempts else None
    if a.world_size is not None and last is not None and last["world_size"] != a.world_size:
        problems.append(f"last attempt world_size {last['world_size']}, expected {a.world_size}")
    if a.excluded is not None:
        node = a.excluded
        by_decision = [e for e in events if e["type"] == "decision" and node in e.get("exclude", [])]
        by_health = [e for e in events if e["type"] == "node_unhealthy" and e.get("node") == node
                     and e.get("excluded")]
        if not by_decision and not by_health:
            problems.append(f"{node} was excluded neither by a decision nor by the health step")
        if last is not None and last.get("excluded") != [node]:
            problems.append(f"last attempt excludes {last.get('excluded')}, expected [{node}]")
        if a.summary:
            print(f"check_supervised: {node} excluded by decision {bool(by_decision)}, by the "
                  f"health step {bool(by_health)}; last attempt on {last and last.get('hosts')}")
    if a.replanned is not None and last is not None:
        plan = json.load(open(f"{a.run_dir}/plan.json", encoding="utf-8"))["plan"]["layout"]
        replans = json.load(open(f"{a.run_dir}/supervisor.json", encoding="utf-8"))["replans"]
        keys = {"tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
                "expert_model_parallel_size": "ep"}
        prefix = "actor_rollout_ref.actor.megatron."
        replanned = {keys[k[len(prefix):]]: int(v) for k, v in
                     (kv.split("=", 1) for kv in replans.get(str(a.replanned), []))
                     if k.startswith(prefix) and k[len(prefix):] in keys}
        runs = {}
        for e in layouts:
            runs.setdefault(e["attempt"], []).append(e)
        first_lay, last_lay = runs.get(attempts[0]["attempt"], []), runs.get(last["attempt"], [])
        if sorted(replanned) != ["ep", "pp", "tp"]:
            problems.append(f"supervisor.json has no layout re-planned for {a.replanned} node(s)")
        if len(last_lay) != last["world_size"]:
            problems.append(f"{len(last_lay)} layout event(s) in the last attempt, expected "
                            f"{last['world_size']}")
        for name, want, got in (("plan", plan, first_lay), ("re-plan", replanned, last_lay)):
            for e in got:
                ran = {k: e[k] for k in ("tp", "pp", "ep")}
                if any(ran[k] != want.get(k) for k in ran):
                    problems.append(f"attempt {e['attempt']} rank {e.get('rank')} ran {ran}, the "
                                    f"{name} says { {k: want.get(k) for k in ran} }")
        for e in last_lay:
            if e["dp"] * e["tp"] * e["pp"] != last["world_size"]:
                problems.append(f"last attempt: DP {e['dp']} x TP {e['tp']} x PP {e['pp']} is "
                                f"not its world size {last['world_size']}")
        if a.summary:
            print(f"check_supervised: plan {[plan[k] for k in ('tp', 'pp', 'ep')]} (TP, PP, EP) "
                  f"on {len(first_lay)} ranks, re-planned for {a.replanned} node(s) "
                  f"{[replanned.get(k) for k in ('tp', 'pp', 'ep')]} on {len(last_lay)} ranks")
    if a.exit == 0 and last is not None:
        done = [e for e in events if e["type"] == "done" and e.get("attempt") == last["attempt"]]
        if len(done) != last["world_size"]:
            problems.append(f"{len(done)} done event(s) in the last attempt, "
                            f"expected {last['world_size']}")
        shas = {e.get("weights_sha256") for e in done}
        if len(shas) != 1:
            problems.append(f"ranks disagree on the final weights: {shas}")
        elif a.sha and shas != {a.sha}:
            problems.append(f"final weights {shas.pop()} differ from the reference {a.sha}")
        started = [e for e in events if e["type"] == "run_started"]
        total = started[-1].get("total_steps", 0) if started else 0
        steps = {e["step"] for e in events if e["type"] == "step"}
        missing = [s for s in range(1, total + 1) if s not in steps]
        if missing:
            problems.append(f"steps never completed: {missing}")

    for p in problems:
        print(f"check_supervised: {p}", file=sys.stderr)
    if problems:
        print(f"check_supervised: FAILED ({len(problems)} problem(s)) in {path}", file=sys.stderr)
        for e in events:
            if e.get("source") != "trainer":
                print("  " + json.dumps(e)[:300], file=sys.stderr)
        return 1
    if a.summary:
        decisions = [f"{e['kind']}" for e in events if e["type"] == "decision"]
        t0 = events[0]["time"] if events else 0
        t1 = events[-1]["time"] if events else 0
        print(f"check_supervised: ok: {len(attempts)} attempt(s), failures {classes or 'none'}, "
              f"decisions {decisions or 'none'}, wall {t1 - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
