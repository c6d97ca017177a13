#!/usr/bin/env python3
"""Checks a run submitted by grpo-launch whose trainer was grpo-bootstrap-probe.

usage: check_launch.py RUN_DIR JOB_ID HOSTS_FILE

Every rank's JSON line (logs/attempt-1/rank-<r>.log: the supervisor reads srun's labelled
stdout and keeps the lines that are not telemetry events in the rank's log) must report the
global rank, world size, local rank, node rank and host that rankmap.json and allocation.json
(step_nodes, node_rank order) give it, source "pmix", and the same rendezvous address, whose host
is the address of node_rank 0 (HOSTS_FILE: the test cluster's "addr name" lines). Every rank must
see the plan's job environment (env.json "job", for the variables the probe reports) and
GRPO_RUN_DIR, GRPO_RUN_ID and SLURM_JOB_ID. Prints every problem and exits 1 when there is any.
"""
import json
import sys

# The variables grpo-bootstrap-probe reports (docs/bootstrap.md).
PROBE_PREFIXES = ("GRPO_", "NCCL_", "GLOO_", "TORCH_")
PROBE_NAMES = {"OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "MASTER_PORT"}


def main() -> int:
    run_dir, job_id, hosts_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    problems = []
    rank_map = json.load(open(f"{run_dir}/rankmap.json"))
    alloc = json.load(open(f"{run_dir}/allocation.json"))
    env = json.load(open(f"{run_dir}/env.json"))["job"]
    run = json.load(open(f"{run_dir}/run.json"))
    addr = {}
    for line in open(hosts_file):
        parts = line.split()
        if len(parts) >= 2:
            addr[parts[1]] = parts[0]

    if alloc["job_id"] != job_id:
        problems.append(f"allocation.json job_id {alloc['job_id']}, expected {job_id}")
    nodes = alloc["step_nodes"]
    if len(nodes) != rank_map["nodes"]:
        problems.append(f"step_nodes {nodes}, rank map needs {rank_map['nodes']} nodes")
    if alloc["tasks_per_node"] != rank_map["ranks_per_node"]:
        problems.append(f"allocation tasks_per_node {alloc['tasks_per_node']}")
    if alloc["batch_host"] != nodes[0]:
        problems.append(f"batch_host {alloc['batch_host']}, expected {nodes[0]}")

    records = {}
    out_path = f"{run_dir}/logs/attempt-1"
    for task in range(len(rank_map["ranks"])):
        path = f"{out_path}/rank-{task}.log"
        try:
            lines = [l.rstrip("\n") for l in open(path, encoding="utf-8") if l.startswith("{")]
        except FileNotFoundError:
            problems.append(f"{path} is missing")
            continue
        if len(lines) != 1:
            problems.append(f"{path}: {len(lines)} JSON lines, expected 1")
            continue
        try:
            rec = json.loads(lines[0])
        except json.JSONDecodeError as e:
            problems.append(f"{path}: not JSON ({e}): {lines[0][:200]}")
            continue
        if rec.get("global_rank") != task:
            problems.append(f"{path}: srun task {task} reports global_rank {rec.get('global_rank')}")
        records[task] = rec

    world = len(rank_map["ranks"])
    if sorted(records) != list(range(world)):
        problems.append(f"ranks {sorted(records)}, expected 0..{world - 1} once each")
    rdzv = {rec.get("rendezvous") for rec in records.values()}
    if len(rdzv) != 1:
        problems.append(f"ranks disagree on the rendezvous: {sorted(map(str, rdzv))}")
    want_host = addr.get(nodes[0])
    expected_env = {k: v for k, v in env.items()
                    if k.startswith(PROBE_PREFIXES) or k in PROBE_NAMES}
    expected_env.update({"GRPO_RUN_DIR": run_dir, "GRPO_RUN_ID": run["run_id"],
                         "SLURM_JOB_ID": str(job_id)})
    for coords in rank_map["ranks"]:
        r = coords["global_rank"]
        rec = records.get(r)
        if rec is None:
            continue
        want = {
            "world_size": world,
            "local_world_size": rank_map["ranks_per_node"],
            "local_rank": coords["local_rank"],
            "node_rank": coords["node_rank"],
            "hostname": nodes[coords["node_rank"]],
            "source": "pmix",
            "rendezvous_ok": True,
        }
        for key, value in want.items():
            if rec.get(key) != value:
                problems.append(f"rank {r}: {key}={rec.get(key)!r}, rank map says {value!r}")
        host = str(rec.get("rendezvous", "")).rpartition(":")[0]
        if host != want_host:
            problems.append(f"rank {r}: rendezvous host {host!r}, expected {want_host!r} "
                            f"(node_rank 0 = {nodes[0]})")
        got_env = rec.get("env", {})
        for key, value in expected_env.items():
            if got_env.get(key) != value:
                problems.append(f"rank {r}: env {key}={got_env.get(key)!r}, expected {value!r}")

    for p in problems:
        print(f"check_launch: {p}", file=sys.stderr)
    if problems:
        print(f"check_launch: FAILED ({len(problems)} problem(s)) in {out_path}", file=sys.stderr)
        return 1
    print(f"check_launch: ok: {world} ranks on {','.join(nodes)} as rankmap.json says, "
          f"rendezvous {next(iter(rdzv))}, job env on every rank")
    return 0


if __name__ == "__main__":
    sys.exit(main())
