#!/usr/bin/env python3
"""Time to every rank past the PMIx fence: `grpo-launch submit` against a bare `srun --mpi=pmix`.

usage: launch_vs_srun.py GRPO_LAUNCH PROBE [--nodes 1,2,4] [--reps 5] [--source DIR]

Starts a throw-away 4-node cluster (tests/cluster/cluster.sh, 4 CPUs per node), then for each
node count N (2 ranks per node) runs, interleaved, REPS times each:

  srun     srun --mpi=pmix -N N --ntasks-per-node=2 --cpus-per-task=2 PROBE --timeout-s 30
           (the bare hello: allocation + one PMIx step, output read from srun's stdout)
  sbatch   sbatch --parsable of a 4-line script running the same srun (Slurm's batch path with
           no grpo-launch at all; output read from its output file)
  launch   grpo-launch --profile-dir tests/data/profiles submit -p slurm-test -m tiny-dense
           --set nodes=N --run-dir D --trainer-cmd 'PROBE --timeout-s 30'
           (plan, run directory, sbatch, batch shell, supervise + libslurm, srun; output read
           from D/logs/attempt-1/rank-<r>.log)

Each time runs from just before the command starts to the moment the N*2-th JSON line (printed
by every rank once it has passed the PMIx fence and rank 0's TCP rendezvous) is seen, polling
files every 2 ms. Each run starts when every node is idle again (cluster.sh wait-idle). For `launch` the
time is split into: the CLI (start to sbatch returned, sbatch included); Slurm's queue and batch
launch (to supervise's start: allocation.json's mtime, written just before srun starts, minus
the setup time supervise logs); supervise's setup (libslurm, the allocation check, its files);
and the step (srun to the last line). Prints a markdown table of medians.

Needs: scripts/install-deps.sh --bench (the Slurm and munge packages of the test cluster), root
(cluster.sh uses namespaces), and built grpo-launch and grpo-bootstrap-probe; python3's
standard library only.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def now() -> float:
    return time.monotonic()


def count_json_lines(path: str) -> int:
    """Rank lines in one file, or in every rank-*.log of a directory (the supervisor writes each
    rank's output to <run_dir>/logs/attempt-N/rank-R.log)."""
    paths = glob.glob(f"{path}/rank-*.log") if os.path.isdir(path) else [path]
    total = 0
    for p in paths:
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                total += sum(1 for line in f if '"global_rank"' in line)
        except FileNotFoundError:
            pass
    return total


def wait_lines(path: str, want: int, deadline: float) -> float:
    while True:
        if count_json_lines(path) >= want:
            return now()
        if now() > deadline:
            raise RuntimeError(f"{path}: fewer than {want} rank lines after the deadline")
        time.sleep(0.002)


def wait_job_done(cluster_dir: str, job: str, timeout: float = 60) -> str:
    deadline = now() + timeout
    pattern = re.compile(rf"^JobId={job} ")
    while now() < deadline:
        try:
            with open(f"{cluster_dir}/jobcomp.log", encoding="utf-8") as f:
                for line in f:
                    if pattern.match(line):
                        return line
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"job {job} did not finish")


def run_srun(probe: str, nodes: int) -> float:
    want = nodes * 2
    t0 = now()
    p = subprocess.Popen(["srun", "--mpi=pmix", f"-N{nodes}", "--ntasks-per-node=2",
                          "--cpus-per-task=2", probe, "--timeout-s", "30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, t_last = 0, None
    for line in p.stdout:
        if '"global_rank"' in line:
            seen += 1
            if seen == want:
                t_last = now()
    rc = p.wait()
    if rc != 0 or t_last is None:
        raise RuntimeError(f"srun exited {rc} with {seen} lines: {p.stderr.read()}")
    return t_last - t0


def run_sbatch(probe: str, nodes: int, work: str, cluster_dir: str) -> float:
    want = nodes * 2
    d = tempfile.mkdtemp(dir=work)
    script = f"{d}/job.sh"
    with open(script, "w") as f:
        f.write(f"#!/bin/bash\n#SBATCH --nodes={nodes}\n#SBATCH --ntasks-per-node=2\n"
                f"#SBATCH --cpus-per-task=2\n#SBATCH --output={d}/out\n"
                f"srun --mpi=pmix --cpus-per-task=2 {probe} --timeout-s 30\n")
    t0 = now()
    job = subprocess.run(["sbatch", "--parsable", script], check=True, capture_output=True,
                         text=True).stdout.strip().split(";")[0]
    t_last = wait_lines(f"{d}/out", want, t0 + 60)
    wait_job_done(cluster_dir, job)
    return t_last - t0


def run_launch(launch: str, probe: str, source: str, nodes: int, work: str,
               cluster_dir: str) -> dict:
    want = nodes * 2
    run_dir = f"{tempfile.mkdtemp(dir=work)}/run"
    t0 = now()
    out = subprocess.run([launch, "--profile-dir", f"{source}/tests/data/profiles", "submit",
                          "-p", "slurm-test", "-m", "tiny-dense", "--set", f"nodes={nodes}",
                          "--run-dir", run_dir, "--trainer-cmd", f"{probe} --timeout-s 30"],
                         check=True, capture_output=True, text=True).stdout
    t_submitted = now()
    job = re.search(r"Submitted batch job (\d+)", out).group(1)
    t_last = wait_lines(f"{run_dir}/logs/attempt-1", want, t0 + 60)
    # allocation.json's mtime (wall clock) -> the monotonic timeline.
    alloc_wall = os.stat(f"{run_dir}/allocation.json").st_mtime_ns / 1e9
    t_alloc = alloc_wall - (time.time() - now())
    rec = wait_job_done(cluster_dir, job)
    if "ExitCode=0:0" not in rec:
        raise RuntimeError(f"job {job} failed: {rec}")
    setup_ms = re.search(r"setup (\d+) ms", open(f"{run_dir}/slurm-{job}.err").read())
    setup = int(setup_ms.group(1)) / 1000 if setup_ms else 0
    return {"total": t_last - t0, "cli": t_submitted - t0,
            "queue": t_alloc - setup - t_submitted, "setup": setup, "step": t_last - t_alloc}


def median_ms(values) -> int:
    return round(statistics.median(values) * 1000)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("launch")
    ap.add_argument("probe")
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--source", default=os.path.normpath(f"{os.path.dirname(__file__)}/../.."))
    args = ap.parse_args()
    launch, probe = os.path.abspath(args.launch), os.path.abspath(args.probe)
    cluster_sh = f"{args.source}/tests/cluster/cluster.sh"
    work = tempfile.mkdtemp(prefix="grpo-launch-bench.")
    cluster_dir = f"{work}/c"
    env_before = os.environ.get("SLURM_CONF")
    try:
        subprocess.run([cluster_sh, "start", "--nodes", "4", "--cpus", "4", "--dir", cluster_dir],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.environ["SLURM_CONF"] = f"{cluster_dir}/slurm.conf"
        # Warm-up: the first batch job after slurmctld starts waits ~3 s.
        run_srun(probe, 2)
        run_sbatch(probe, 2, work, cluster_dir)
        run_launch(launch, probe, args.source, 2, work, cluster_dir)
        rows = []
        for n in [int(x) for x in args.nodes.split(",")]:
            srun, sbatch, launches = [], [], []
            idle = [cluster_sh, "wait-idle", "--dir", cluster_dir]
            for _ in range(args.reps):
                # Every run starts on an idle cluster (a finished job's nodes stay COMPLETING
                # for a moment; a job submitted then waits for the next scheduler pass).
                subprocess.run(idle, check=True, stdout=subprocess.DEVNULL)
                srun.append(run_srun(probe, n))
                subprocess.run(idle, check=True, stdout=subprocess.DEVNULL)
                sbatch.append(run_sbatch(probe, n, work, cluster_dir))
                subprocess.run(idle, check=True, stdout=subprocess.DEVNULL)
                launches.append(run_launch(launch, probe, args.source, n, work, cluster_dir))
            total = [x["total"] for x in launches]
            rows.append((n, srun, sbatch, launches, total))
            print(f"{n} node(s): srun {[round(x * 1000) for x in srun]} sbatch "
                  f"{[round(x * 1000) for x in sbatch]} launch {[round(x * 1000) for x in total]}",
                  file=sys.stderr)
        print(f"load average at the end: {open('/proc/loadavg').read().split()[:3]}, "
              f"{os.cpu_count()} CPUs, {args.reps} runs each, interleaved\n")
        print("| nodes x ranks | bare srun | sbatch + srun (no grpo-launch) | grpo-launch | "
              "grpo-launch / bare srun | grpo-launch / sbatch + srun | grpo-launch: CLI incl. "
              "sbatch | Slurm queue + batch launch | supervise setup | srun step to last fence |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for n, srun, sbatch, launches, total in rows:
            print(f"| {n} x 2 | {median_ms(srun)} | {median_ms(sbatch)} | {median_ms(total)} | "
                  f"{statistics.median(total) / statistics.median(srun):.2f} | "
                  f"{statistics.median(total) / statistics.median(sbatch):.2f} | "
                  f"{median_ms([x['cli'] for x in launches])} | "
                  f"{median_ms([x['queue'] for x in launches])} | "
                  f"{median_ms([x['setup'] for x in launches])} | "
                  f"{median_ms([x['step'] for x in launches])} |")
        print("\nall runs (ms):")
        for n, srun, sbatch, launches, total in rows:
            print(f"- {n} x 2: srun {[round(x * 1000) for x in srun]}; sbatch "
                  f"{[round(x * 1000) for x in sbatch]}; grpo-launch "
                  f"{[round(x * 1000) for x in total]}")
    finally:
        subprocess.run([cluster_sh, "stop", "--dir", cluster_dir],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
        if env_before is None:
            os.environ.pop("SLURM_CONF", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
