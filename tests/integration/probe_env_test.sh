#!/usr/bin/env bash
# grpo-bootstrap-probe in env mode: 2 local processes with the torchrun variables, no Slurm.
#   probe_env_test.sh PROBE CHECKER...
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
probe=$1
shift
unset PMIX_NAMESPACE SLURM_JOB_ID

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

host=$(hostname)
run_pair() { # port
  local pids=() r
  for r in 0 1; do
    env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT="$1" GRPO_PROBE_MARK=env-$$ \
      timeout 60 "$probe" --timeout-s 20 >"$TEST_TMP/out.$r" 2>"$TEST_TMP/err.$r" &
    pids+=($!)
  done
  local rc=0
  for r in 0 1; do wait "${pids[$r]}" || rc=1; done
  return $rc
}

# The port is free when chosen but may be taken before rank 0 binds it: try a few ports.
ok=0
for _ in 1 2 3; do
  port=$(free_port)
  if run_pair "$port"; then
    ok=1
    break
  fi
  grep -q "Address already in use" "$TEST_TMP/err.0" || break
done
if ((ok == 0)); then
  cat "$TEST_TMP"/out.* "$TEST_TMP"/err.* >&2
  fail "the env-mode probe pair failed"
fi
cat "$TEST_TMP/out.0" "$TEST_TMP/out.1" >"$TEST_TMP/out"
"$@" "$TEST_TMP/out" --source env --nodes "$host" --ranks-per-node 2 \
  --expect-env GRPO_PROBE_MARK=env-$$ --rendezvous-host 127.0.0.1

# A broken environment: exit 1 with one line on stderr naming the variable.
rc=0
env -u WORLD_SIZE RANK=0 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 \
  "$probe" >"$TEST_TMP/bad.out" 2>"$TEST_TMP/bad.err" || rc=$?
((rc == 1)) || fail "probe with WORLD_SIZE unset exited $rc, expected 1"
[[ ! -s "$TEST_TMP/bad.out" ]] || fail "probe with a broken env printed to stdout: $(cat "$TEST_TMP/bad.out")"
(($(wc -l <"$TEST_TMP/bad.err") == 1)) || fail "expected one stderr line, got: $(cat "$TEST_TMP/bad.err")"
grep -q "WORLD_SIZE is not set" "$TEST_TMP/bad.err" || fail "unexpected error: $(cat "$TEST_TMP/bad.err")"

rc=0
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=99999 \
  "$probe" >"$TEST_TMP/bad.out" 2>"$TEST_TMP/bad.err" || rc=$?
((rc == 1)) || fail "probe with MASTER_PORT=99999 exited $rc, expected 1"
grep -q "MASTER_PORT='99999' is out of range" "$TEST_TMP/bad.err" ||
  fail "unexpected error: $(cat "$TEST_TMP/bad.err")"
echo "ok: env-mode probe pair and broken-environment errors"
