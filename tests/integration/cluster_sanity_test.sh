#!/usr/bin/env bash
# The shared cluster is what the other slurm tests assume: every node idle, both partitions, and
# each node's tasks see their own hostname.
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
require_cluster

nodes=${GRPO_CLUSTER_NODES:?}
idle=$(sinfo -h -N -p debug -t idle -o '%N' | sort -u | wc -l)
((idle == nodes)) || fail "expected $nodes idle nodes, sinfo says: $(sinfo -N -o '%N %P %t' | tr '\n' ' ')"
sinfo -h -o '%P' | grep -qx 'debug\*' || fail "no default partition debug"
sinfo -h -o '%P' | grep -qx 'batch' || fail "no partition batch"

out=$(timeout 60 srun -N "$nodes" --ntasks-per-node=1 hostname | sort | tr '\n' ' ')
want=$(for ((i = 1; i <= nodes; i++)); do echo "n$i"; done | sort | tr '\n' ' ')
[[ "$out" == "$want" ]] || fail "task hostnames '$out', expected '$want'"
srun --mpi=list 2>&1 | grep -q pmix || fail "srun --mpi=list has no pmix: $(srun --mpi=list 2>&1)"
echo "ok: $nodes nodes idle, partitions debug and batch, hostnames $out"
