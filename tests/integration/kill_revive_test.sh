#!/usr/bin/env bash
# cluster.sh kill-node / revive-node: the node's slurmd and tasks die, it comes back usable; the
# same after restart-ctld (whose old slurmctld's helper process must not count as a dead daemon).
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
require_cluster
cluster=${GRPO_CLUSTER_SH:?}
dir=${GRPO_TEST_CLUSTER_DIR:?}
node=n${GRPO_CLUSTER_NODES:?}

t0=$(now_ms)
"$cluster" kill-node --dir "$dir" "$node" || fail "kill-node $node failed"
"$cluster" status --dir "$dir" >"$TEST_TMP/status" && fail "status says all is well after kill-node"
grep -q "slurmd.$node killed" "$TEST_TMP/status" || fail "status does not report $node killed"
"$cluster" kill-node --dir "$dir" "$node" 2>/dev/null && fail "kill-node of a dead node succeeded"
"$cluster" revive-node --dir "$dir" "$node" || fail "revive-node $node failed"
host=$(timeout 60 srun -w "$node" -N1 hostname) || fail "srun on revived $node failed"
[[ "$host" == "$node" ]] || fail "revived $node says hostname '$host'"
"$cluster" wait-idle --dir "$dir" --timeout 30 || fail "cluster not idle after revive"
"$cluster" status --dir "$dir" >/dev/null || fail "status not clean after revive"
# restart-ctld, then the same: a revive checks that every recorded daemon is alive.
"$cluster" restart-ctld --dir "$dir" || fail "restart-ctld failed"
"$cluster" status --dir "$dir" >"$TEST_TMP/status" || {
  cat "$TEST_TMP/status" >&2
  fail "status not clean after restart-ctld"
}
"$cluster" kill-node --dir "$dir" "$node" || fail "kill-node $node after restart-ctld failed"
"$cluster" revive-node --dir "$dir" "$node" || fail "revive-node $node after restart-ctld failed"
"$cluster" wait-idle --dir "$dir" --timeout 30 || fail "cluster not idle after the second revive"
echo "ok: killed and revived $node twice (once after restart-ctld) in $(($(now_ms) - t0)) ms"
