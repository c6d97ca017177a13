#!/usr/bin/env bash
# srun --mpi=pmix grpo-bootstrap-probe on the given nodes; checks the ranks' JSON lines.
#   probe_pmix_test.sh PARTITION NODES(n1,n2) RANKS_PER_NODE CHECKER...
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
require_cluster
partition=$1 nodes=$2 rpn=$3
shift 3
probe=${GRPO_PROBE:?}
count=$(tr ',' '\n' <<<"$nodes" | wc -l)
rank0_addr=$(awk '$2 == "'"${nodes%%,*}"'" { print $1 }' "$GRPO_TEST_CLUSTER_DIR/hosts")

t0=$(now_ms)
rc=0
GRPO_PROBE_MARK=pmix-$$ OMP_NUM_THREADS=3 NCCL_DEBUG=WARN \
  timeout 90 srun --mpi=pmix -p "$partition" -w "$nodes" -N "$count" --ntasks-per-node="$rpn" \
  --kill-on-bad-exit=1 "$probe" --timeout-s 30 >"$TEST_TMP/out" 2>"$TEST_TMP/err" || rc=$?
elapsed=$(($(now_ms) - t0))
if ((rc != 0)); then
  cat "$TEST_TMP/out" "$TEST_TMP/err" >&2
  fail "srun exited $rc after $elapsed ms"
fi
"$@" "$TEST_TMP/out" --source pmix --nodes "$nodes" --ranks-per-node "$rpn" \
  --expect-env GRPO_PROBE_MARK=pmix-$$ --expect-env OMP_NUM_THREADS=3 \
  --expect-env NCCL_DEBUG=WARN --rendezvous-host "$rank0_addr"
echo "srun --mpi=pmix -N$count --ntasks-per-node=$rpn: $elapsed ms"
