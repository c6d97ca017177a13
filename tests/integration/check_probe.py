#!/usr/bin/env python3
"""Checks the JSON lines of grpo-bootstrap-probe ranks against the expected rank map.

usage: check_probe.py OUTPUT_FILE --source pmix|env --nodes n1,n2 --ranks-per-node 2
                      [--expect-env NAME=VALUE ...] [--rendezvous-host HOST]

The nodes are listed in node_rank order. Ranks are expected in block order (global_rank =
node_rank * ranks_per_node + local_rank), which is srun's default distribution and torchrun's.
Prints every problem found and exits 1 when there is any.
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--source", required=True, choices=["pmix", "env"])
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--ranks-per-node", type=int, required=True)
    ap.add_argument("--expect-env", action="append", default=[])
    ap.add_argument("--rendezvous-host")
    args = ap.parse_args()

    nodes = args.nodes.split(",")
    rpn = args.ranks_per_node
    world_size = len(nodes) * rpn
    problems = []
    ranks = {}
    with open(args.output, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"line {n} is not JSON ({e}): {line[:200]}")
                continue
            r = rec.get("global_rank")
            if not isinstance(r, int):
                problems.append(f"line {n} has no integer global_rank: {line[:200]}")
                continue
            if r in ranks:
                problems.append(f"global_rank {r} appears twice")
            ranks[r] = rec

    if sorted(ranks) != list(range(world_size)):
        problems.append(f"global ranks {sorted(ranks)}, expected 0..{world_size - 1} once each")

    rendezvous = {rec.get("rendezvous") for rec in ranks.values()}
    if len(rendezvous) != 1:
        problems.append(f"ranks disagree on the rendezvous: {sorted(map(str, rendezvous))}")
    if args.rendezvous_host is not None:
        for r, rec in ranks.items():
            host = str(rec.get("rendezvous", "")).rpartition(":")[0]
            if host != args.rendezvous_host:
                problems.append(f"rank {r}: rendezvous host {host!r}, expected "
                                f"{args.rendezvous_host!r}")

    expected_env = dict(kv.split("=", 1) for kv in args.expect_env)
    for r, rec in sorted(ranks.items()):
        node = r // rpn
        want = {
            "world_size": world_size,
            "local_world_size": rpn,
            "local_rank": r % rpn,
            "node_rank": node,
            "hostname": nodes[node] if node < len(nodes) else None,
            "source": args.source,
            "rendezvous_ok": True,
        }
        for key, value in want.items():
            if rec.get(key) != value:
                problems.append(f"rank {r}: {key}={rec.get(key)!r}, expected {value!r}")
        env = rec.get("env", {})
        for key, value in expected_env.items():
            if env.get(key) != value:
                problems.append(f"rank {r}: env {key}={env.get(key)!r}, expected {value!r}")

    # node_rank must be consistent per host (each host one node_rank and vice versa).
    by_host = {}
    for rec in ranks.values():
        by_host.setdefault(rec.get("hostname"), set()).add(rec.get("node_rank"))
    for host, node_ranks in by_host.items():
        if len(node_ranks) != 1:
            problems.append(f"host {host} has several node ranks {sorted(map(str, node_ranks))}")

    for p in problems:
        print(f"check_probe: {p}", file=sys.stderr)
    if problems:
        print(f"check_probe: FAILED ({len(problems)} problem(s)); output was:", file=sys.stderr)
        with open(args.output, encoding="utf-8") as f:
            sys.stderr.write(f.read())
        return 1
    print(f"check_probe: ok: {world_size} ranks on {','.join(nodes)}, source {args.source}, "
          f"rendezvous {next(iter(rendezvous))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
