#!/usr/bin/env bash
# Measures the throw-away test cluster (tests/cluster/cluster.sh): start-to-idle and stop times,
# and `srun` step launch times with and without --mpi=pmix (plain `true` and the bootstrap probe).
#   bench/slurm-launch/measure.sh PROBE [--nodes N] [--reps R]
# Prints a markdown table (medians over R cluster starts / R steps). Results: RESULTS.md.
# Needs: scripts/install-deps.sh --bench (the Slurm and munge packages of the test cluster), root
# (cluster.sh uses namespaces), and a built grpo-bootstrap-probe as PROBE.
set -euo pipefail
probe=${1:?usage: measure.sh PROBE [--nodes N] [--reps R]}
shift
nodes=4 reps=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cluster=$(cd "$(dirname "$0")/../../tests/cluster" && pwd)/cluster.sh
now_ms() {
  local t=${EPOCHREALTIME/./}
  echo $((t / 1000))
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

dir=$(mktemp -d /tmp/grpo-bench.XXXXXX)
rmdir "$dir"
trap '"$cluster" stop --dir "$dir" >/dev/null 2>&1 || true' EXIT

starts=() stops=()
for ((i = 0; i < reps; i++)); do
  t0=$(now_ms)
  "$cluster" start --nodes "$nodes" --dir "$dir" >/dev/null 2>&1
  starts+=($(($(now_ms) - t0)))
  if ((i < reps - 1)); then
    t0=$(now_ms)
    "$cluster" stop --dir "$dir" >/dev/null 2>&1
    stops+=($(($(now_ms) - t0)))
  fi
done
export SLURM_CONF=$dir/slurm.conf

step() { # label srun-args...
  local label=$1 t0 times=()
  shift
  srun "$@" >/dev/null # warm-up (the first step of a fresh cluster is slower)
  for ((i = 0; i < reps; i++)); do
    t0=$(now_ms)
    srun "$@" >/dev/null
    times+=($(($(now_ms) - t0)))
  done
  echo "| $label | $(printf '%s\n' "${times[@]}" | median) | ${times[*]} |"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo
echo "| what | median ms | all ms |"
echo "|---|---|---|"
echo "| cluster.sh start, $nodes nodes to idle | $(printf '%s\n' "${starts[@]}" | median) | ${starts[*]} |"
echo "| cluster.sh stop | $(printf '%s\n' "${stops[@]}" | median) | ${stops[*]} |"
step "srun -N1 -n1 true" -N1 -n1 true
step "srun -N2 --ntasks-per-node=2 true" -N2 --ntasks-per-node=2 true
step "srun --mpi=pmix -N2 --ntasks-per-node=2 true" --mpi=pmix -N2 --ntasks-per-node=2 true
step "srun --mpi=pmix -N2 --ntasks-per-node=2 probe" --mpi=pmix -N2 --ntasks-per-node=2 "$probe"
step "srun --mpi=pmix -N4 --ntasks-per-node=2 probe" --mpi=pmix -N4 --ntasks-per-node=2 "$probe"
