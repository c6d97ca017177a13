# shellcheck shell=bash
# Shared by the slurm integration tests: fail loudly, never skip.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The fixture's cluster must be up: a missing or dead cluster is a failure, not a skip.
require_cluster() {
  [[ -n "${SLURM_CONF:-}" ]] || fail "SLURM_CONF is not set (run through ctest: the slurm_cluster fixture sets it)"
  [[ -f "$SLURM_CONF" ]] || fail "SLURM_CONF=$SLURM_CONF does not exist: the test cluster did not start"
  local ping
  ping=$(timeout 10 scontrol ping 2>&1) || fail "scontrol ping failed: $ping"
  grep -q UP <<<"$ping" || fail "slurmctld is not up: $ping"
}

now_ms() {
  local t=${EPOCHREALTIME/./}
  echo $((t / 1000))
}

TEST_TMP=$(mktemp -d /tmp/grpo-itest.XXXXXX)
# GRPO_KEEP_TEST_TMP=1 keeps it for a post-mortem.
[[ -n ${GRPO_KEEP_TEST_TMP:-} ]] || trap 'rm -rf "$TEST_TMP"' EXIT
