#!/usr/bin/env bash
# A throw-away multi-node Slurm cluster on this one machine, for integration tests.
#
#   cluster.sh start [--nodes N] [--cpus C] [--memory MB] [--dir DIR] [--timeout S] [--port-base P]
#                    [--slurmd-timeout S] [--replace]
#       --replace: first stop a cluster still running in DIR; --slurmd-timeout: seconds before a
#       silent node is marked DOWN (default 10; a killed node's srun fails ~2.5x this later)
#   cluster.sh stop --dir DIR [--keep]
#   cluster.sh status --dir DIR
#   cluster.sh kill-node --dir DIR nX       SIGKILL nX's slurmd and every process on nX
#   cluster.sh revive-node --dir DIR nX     start nX's slurmd again, wait until it is usable
#   cluster.sh wait-idle --dir DIR          wait until every node is idle again
#   cluster.sh restart-ctld --dir DIR       stop slurmctld (SIGTERM, state saved) and start it
#                                           again; returns once it answers `scontrol ping`
#   cluster.sh partition --dir DIR nX       cut nX off the network: every packet sent or received
#                                           by a socket of a process on nX is dropped (nftables)
#   cluster.sh heal --dir DIR [nX]          end nX's partition (every partition without nX)
#
# munged (private key and socket), one slurmctld and N slurmd (`slurmd -N nX`, each in its own
# UTS + mount namespace: hostname nX, a private /etc/hosts mapping n1..nN to 127.0.0.11..; and,
# where cgroup v2 is mounted under /sys/fs/cgroup, its own cgroup, which `partition` matches), all
# state under DIR. Daemons run under setsid, so a test runner that kills its process group spares
# them; they are stopped only through the pids recorded in DIR/pids (never by name). `start`
# prints `export SLURM_CONF=...` lines on stdout (progress goes to stderr) and writes DIR/env.sh.
# Every wait is bounded; on failure start prints the daemons' log tails, stops what it started
# and exits non-zero. See docs/test-cluster.md for every setting and why.
# `[[ valid ]] && ((in range)) || die ...` is intended: die exits.
# shellcheck disable=SC2015
set -euo pipefail

readonly MARKER=.grpo-test-cluster
readonly ADDR_BASE=10 # node nX gets 127.0.0.(ADDR_BASE+X)
readonly MAX_NODES=64
# Unix sockets live under SPOOL (munge, slurmstepd, mpi/pmix): SPOOL is DIR when DIR is at most
# this long, else a short mktemp dir under /tmp, so that no socket path exceeds 107 bytes.
readonly SOCKET_DIR_MAX=50

log() { echo "cluster.sh: $*" >&2; }
die() {
  echo "cluster.sh: error: $*" >&2
  exit 1
}
usage() {
  sed -n '4,/^#$/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

now_ms() {
  local t=${EPOCHREALTIME/./}
  echo $((t / 1000))
}
T0=$(now_ms)
# Progress with the time since the command started, on stderr.
phase() { log "[+$(($(now_ms) - T0)) ms] $*"; }

# --- process bookkeeping: DIR/pids holds "role pid starttime uts-namespace" per daemon ---------

# Sets PSTART to the start time (clock ticks since boot) of pid, which tells a reused pid from
# ours; fails when pid is gone or a zombie (this machine's init reaps orphans only every second
# or two). Builtins only: forks are slow here (gVisor) and this runs in every wait loop.
proc_start() {
  local stat
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  stat=${stat##*) }
  # After "pid (comm) " the fields start at 3 (state); starttime is field 22, i.e. word 20.
  local -a f
  read -r -a f <<<"$stat"
  [[ "${f[0]}" != Z && "${f[0]}" != X ]] || return 1
  PSTART=${f[19]}
}

proc_uts() { readlink "/proc/$1/ns/uts" 2>/dev/null; }

# True when the recorded daemon (pid + start time) is still running.
alive() {
  proc_start "$1" || return 1
  [[ "$PSTART" == "$2" ]]
}

# Records (or re-records) a daemon: "role pid starttime uts-namespace".
record() { # role pid [uts]
  local role=$1 pid=$2 uts=${3:-none} start=gone
  if proc_start "$pid"; then start=$PSTART; fi
  if grep -q "^$role " "$DIR/pids" 2>/dev/null; then sed -i "/^$role /d" "$DIR/pids"; fi
  echo "$role $pid $start $uts" >>"$DIR/pids"
}

# role -> "pid start uts" (empty when not recorded)
lookup() {
  local role pid start uts
  while read -r role pid start uts; do
    if [[ "$role" == "$1" ]]; then
      echo "$pid $start $uts"
      return 0
    fi
  done <"$DIR/pids"
  return 0
}

# Pids of every process whose UTS namespace is `uts` (a node's slurmd, slurmstepds and tasks).
# Refuses the namespace this script runs in: that would be every process of the machine.
pids_in_uts() {
  local uts=$1 p
  [[ "$uts" == uts:* ]] || return 0
  if [[ "$uts" == "$MY_UTS" || "$uts" == "$(proc_uts 1)" ]]; then
    log "refusing to kill by namespace $uts: it is not a private node namespace"
    return 0
  fi
  local pattern=${uts//[/\\[}
  pattern=${pattern//]/\\]}
  # One find instead of a readlink per process (much faster, under gVisor in particular).
  while read -r p; do
    p=${p#/proc/}
    echo "${p%%/*}"
  done < <(find /proc/[0-9]*/ns/uts -maxdepth 0 -lname "$pattern" 2>/dev/null)
  return 0
}

# Sends `sig` to a recorded daemon if it is still the same process.
signal_role() { # role sig
  local pid start uts
  read -r pid start uts <<<"$(lookup "$1")"
  [[ -n "${pid:-}" ]] || return 0
  if alive "$pid" "$start"; then kill "-$2" "$pid" 2>/dev/null || true; fi
}

# Waits (bounded) until none of the given roles is alive; true when all are gone.
wait_roles_gone() { # timeout_ms role...
  local deadline=$(($(now_ms) + $1)) role pid start uts any
  shift
  while :; do
    any=0
    for role in "$@"; do
      read -r pid start uts <<<"$(lookup "$role")"
      [[ -n "${pid:-}" ]] && alive "$pid" "$start" && any=1
    done
    ((any == 0)) && return 0
    (($(now_ms) > deadline)) && return 1
    sleep 0.05
  done
}

# SIGKILL everything in a node's namespace, then wait until it is empty (bounded).
kill_node_namespace() { # node
  local pid start uts p deadline
  read -r pid start uts <<<"$(lookup "slurmd.$1")"
  [[ -n "${uts:-}" && "$uts" == uts:* ]] || return 0
  deadline=$(($(now_ms) + 5000))
  while :; do
    local victims
    victims=$(pids_in_uts "$uts")
    [[ -z "$victims" ]] && return 0
    for p in $victims; do kill -KILL "$p" 2>/dev/null || true; done
    if (($(now_ms) > deadline)); then
      log "processes still alive on $1 after SIGKILL: ${victims//$'\n'/ }"
      return 1
    fi
    sleep 0.05
  done
}

# --- node cgroups and network partitions ------------------------------------------------------
# The nodes share the machine's network namespace, and a connecting socket does not bind a node
# address (its packets leave from 127.0.0.1): addresses cannot tell the nodes' traffic apart. Each
# node's slurmd starts in its own cgroup v2 instead (DIR/cgroup.path), its slurmstepds and tasks
# inherit it, and every socket remembers the cgroup it was created in; nftables' `socket
# cgroupv2` matches that (output hook: the sender's socket, input hook: the receiver's).

# The cgroup v2 mount point under /sys/fs/cgroup (nft resolves its paths there), or nothing.
cgroup2_mount() {
  local mnt fs
  while read -r _ mnt fs _; do
    if [[ "$fs" == cgroup2 && ("$mnt" == /sys/fs/cgroup || "$mnt" == /sys/fs/cgroup/*) ]]; then
      echo "$mnt"
      return 0
    fi
  done </proc/mounts
  return 0
}

cluster_id() {
  local id
  id=$(cksum <<<"$DIR")
  echo "${id%% *}"
}

# Creates DIR's cgroup (one per cluster directory) and records it in DIR/cgroup.path; nothing when
# cgroup v2 is not there (partition then refuses).
make_cluster_cgroup() {
  local mnt
  : >"$DIR/cgroup.path"
  mnt=$(cgroup2_mount)
  [[ -n "$mnt" && -w "$mnt" ]] || return 0
  mkdir -p "$mnt/grpo-cluster-$(cluster_id)" 2>/dev/null || return 0
  echo "$mnt/grpo-cluster-$(cluster_id)" >"$DIR/cgroup.path"
}

cluster_cgroup() { cat "$DIR/cgroup.path" 2>/dev/null || true; }

# The cgroup.procs file slurmd of node $1 moves itself into (empty without cgroups).
node_cgroup_procs() {
  local cg
  cg=$(cluster_cgroup)
  [[ -n "$cg" ]] || return 0
  mkdir -p "$cg/$1" && echo "$cg/$1/cgroup.procs"
}

# nftables table of node $1's partition (one table per partition: heal deletes it whole).
partition_table() { echo "grpo_cluster_$(cluster_id)_$1"; }

heal_node() { # node
  nft delete table inet "$(partition_table "$1")" 2>/dev/null || true
}

heal_all() {
  command -v nft >/dev/null || return 0
  local node
  while read -r node; do
    heal_node "$node"
  done < <(sed -n 's/^NodeName=\(n[0-9]*\) .*/\1/p' "$DIR/slurm.conf" 2>/dev/null)
}

# Removes the node cgroups and the cluster's (once their processes are gone: best effort).
remove_cgroups() {
  local cg d
  cg=$(cluster_cgroup)
  [[ -n "$cg" && -d "$cg" ]] || return 0
  for d in "$cg"/n*/; do [[ -d "$d" ]] && rmdir "$d" 2>/dev/null; done
  rmdir "$cg" 2>/dev/null || log "cgroup $cg not removed (processes left in it)"
}

# --- configuration -----------------------------------------------------------------------------

node_names() {
  local i
  for ((i = 1; i <= NODES; i++)); do echo "n$i"; done
}

port_in_use() { ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# NODES+1 consecutive free TCP ports from a random base (controller first, then n1..nN).
pick_ports() {
  local try base i ok
  for ((try = 0; try < 50; try++)); do
    base=$((20000 + (RANDOM * 32768 + RANDOM) % 35000))
    ok=1
    for ((i = 0; i <= NODES; i++)); do
      if port_in_use $((base + i)); then
        ok=0
        break
      fi
    done
    if ((ok)); then
      echo "$base"
      return 0
    fi
  done
  die "found no $((NODES + 1)) consecutive free TCP ports"
}

write_config() { # base_port
  local base=$1 i
  local ctl_host
  ctl_host=$(hostname -s)
  {
    echo "# Generated by tests/cluster/cluster.sh for a throw-away test cluster; see docs/test-cluster.md."
    echo "ClusterName=grpotest"
    echo "SlurmctldHost=$ctl_host(127.0.0.1)"
    echo "SlurmctldPort=$base"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$SPOOL/munge/munge.socket.2,cred_expire=10"
    echo "StateSaveLocation=$DIR/ctld/state"
    echo "SlurmctldPidFile=$DIR/ctld/slurmctld.pid"
    echo "SlurmctldLogFile=$DIR/ctld/slurmctld.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdSpoolDir=$SPOOL/nodes/%n/spool"
    echo "SlurmdPidFile=$DIR/nodes/%n/slurmd.pid"
    echo "SlurmdLogFile=$DIR/nodes/%n/slurmd.log"
    echo "SlurmdDebug=info"
    echo "TmpFS=$SPOOL/tmp/%n"
    echo "SlurmdParameters=config_overrides"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SwitchType=switch/none"
    echo "MpiDefault=none"
    echo "LaunchParameters=use_interactive_step"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "SchedulerType=sched/backfill"
    echo "SchedulerParameters=batch_sched_delay=0,sched_interval=5,bf_interval=5"
    echo "ReturnToService=2"
    echo "SlurmdTimeout=$SLURMD_TIMEOUT"
    echo "SlurmctldTimeout=10"
    echo "MessageTimeout=10"
    echo "InactiveLimit=0"
    echo "KillWait=2"
    echo "WaitTime=0"
    echo "MinJobAge=300"
    echo "JobCompType=jobcomp/filetxt"
    echo "JobCompLoc=$DIR/jobcomp.log"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "MailProg=/bin/true"
    for ((i = 1; i <= NODES; i++)); do
      echo "NodeName=n$i NodeAddr=127.0.0.$((ADDR_BASE + i)) NodeHostname=localhost" \
        "Port=$((base + i)) CPUs=$CPUS RealMemory=$MEMORY State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP"
    echo "PartitionName=batch Nodes=n[1-$NODES] Default=NO MaxTime=INFINITE State=UP"
  } >"$DIR/slurm.conf"

  {
    echo "127.0.0.1 localhost"
    echo "127.0.0.1 $ctl_host"
    for ((i = 1; i <= NODES; i++)); do echo "127.0.0.$((ADDR_BASE + i)) n$i"; done
  } >"$DIR/hosts"
}

# --- daemons ----------------------------------------------------------------------------------

start_munged() {
  mkdir -p "$SPOOL/munge"
  chmod 755 "$SPOOL/munge" # the socket must be reachable; the key itself is 0400
  dd if=/dev/urandom of="$SPOOL/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$SPOOL/munge/munge.key"
  setsid munged --foreground --force --num-threads=2 \
    --socket="$SPOOL/munge/munge.socket.2" --key-file="$SPOOL/munge/munge.key" \
    --pid-file="$SPOOL/munge/munged.pid" --log-file="$SPOOL/munge/munged.log" \
    --seed-file="$SPOOL/munge/munged.seed" </dev/null >>"$SPOOL/munge/munged.out" 2>&1 &
  record munged $!
}

# slurmctld's helper process (slurmscriptd) is recorded too, so that stop can reap it; the records
# of an earlier slurmctld's helpers go (restart-ctld: they exited with it, and a dead record would
# make every later liveness check, e.g. revive-node's, fail).
record_ctld_children() {
  local ctld_pid child
  sed -i '/^slurmctld\.child\./d' "$DIR/pids"
  read -r ctld_pid _ _ <<<"$(lookup slurmctld)"
  for child in $(ps -o pid= --ppid "$ctld_pid" 2>/dev/null); do record "slurmctld.child.$child" "$child"; done
}

start_slurmctld() {
  mkdir -p "$DIR/ctld/state"
  SLURM_CONF="$DIR/slurm.conf" setsid slurmctld -D -i -f "$DIR/slurm.conf" \
    </dev/null >>"$DIR/ctld/slurmctld.out" 2>&1 &
  record slurmctld $!
}

# slurmd for node $1 in its own UTS + mount namespace (hostname, private /etc/hosts). Returns at
# once; record_node_uts records the namespace once the node has registered.
launch_slurmd() {
  local node=$1
  [[ -d "$SPOOL/tmp/$node" ]] || mkdir -p "$DIR/nodes/$node" "$SPOOL/nodes/$node/spool" "$SPOOL/tmp/$node"
  local procs
  procs=$(node_cgroup_procs "$node")
  # shellcheck disable=SC2016 # $1..$4 are expanded by the inner bash
  SLURM_CONF="$DIR/slurm.conf" setsid unshare --uts --mount --propagation private -- \
    /bin/bash -c '{ [[ -z "$4" ]] || echo $$ >"$4"; } && hostname "$1" &&
      mount --bind "$2" /etc/hosts && exec slurmd -D -N "$1" -f "$3"' \
    slurmd-ns "$node" "$DIR/hosts" "$DIR/slurm.conf" "$procs" \
    </dev/null >>"$DIR/nodes/$node/slurmd.out" 2>&1 &
  record "slurmd.$node" $!
}

# Records node $1's UTS namespace (kill-node and stop kill everything in it). Called once the node
# registered, so unshare has certainly run; refuses a namespace that is not private.
record_node_uts() {
  local node=$1 pid start uts
  read -r pid start uts <<<"$(lookup "slurmd.$node")"
  alive "$pid" "$start" || die "slurmd for $node (pid $pid) is gone"
  uts=$(proc_uts "$pid")
  [[ -n "$uts" && "$uts" != "$MY_UTS" ]] || die "slurmd for $node is not in its own UTS namespace"
  record "slurmd.$node" "$pid" "$uts"
}

# Prints the last lines of every log (on stderr) for a failure report. A daemon's stdout/stderr
# (.out) is shown only when its log file is empty: it repeats the log otherwise.
log_tails() {
  local f out
  for f in "$SPOOL"/munge/munged.log "$DIR"/ctld/slurmctld.log "$DIR"/nodes/*/slurmd.log; do
    out=${f%.log}.out
    if [[ -s "$f" ]]; then
      echo "---- tail $f" >&2
      tail -n 15 "$f" >&2
    elif [[ -s "$out" ]]; then
      echo "---- tail $out" >&2
      tail -n 15 "$out" >&2
    fi
  done
}

# Dies (after the log tails) when a recorded daemon is no longer running.
check_daemons_alive() {
  local role pid start uts
  while read -r role pid start uts; do
    [[ "$role" == dead.* ]] && continue
    if ! alive "$pid" "$start"; then
      FAIL_REASON="$role (pid $pid) exited"
      return 1
    fi
  done <"$DIR/pids"
  return 0
}

# sinfo's node states as "name state" lines (short states: idle, mix, alloc, down*, ...).
node_states() { SLURM_CONF="$DIR/slurm.conf" sinfo -h -N -p debug -o '%N %t' 2>/dev/null | sort -u; }

# Waits until all listed nodes are in one of the given states (regex), within timeout_s.
wait_nodes() { # timeout_s state_regex node...
  local timeout_s=$1 regex=$2
  shift 2
  local deadline=$(($(now_ms) + timeout_s * 1000)) states node ok
  while :; do
    states=$(node_states)
    ok=1
    for node in "$@"; do
      grep -Eq "^$node ($regex)\$" <<<"$states" || {
        ok=0
        break
      }
    done
    ((ok)) && return 0
    check_daemons_alive || return 1
    if (($(now_ms) > deadline)); then
      FAIL_REASON="nodes not ${regex} within ${timeout_s}s; sinfo says: ${states//$'\n'/, }"
      return 1
    fi
    sleep 0.1
  done
}

# --- commands ---------------------------------------------------------------------------------

# Every daemon recorded in DIR/pids: TERM, bounded wait, then KILL; then every process left in the
# nodes' namespaces.
stop_daemons() {
  local role pid start uts roles=()
  [[ -f "$DIR/pids" ]] || return 0
  while read -r role pid start uts; do
    [[ "$role" == slurmd.* || "$role" == slurmctld* ]] && roles+=("$role")
  done <"$DIR/pids"
  # A short grace period only: nothing of a throw-away cluster needs saving (slurmctld takes
  # ~1.5 s to save its state and exit on SIGTERM).
  for role in "${roles[@]}"; do signal_role "$role" TERM; done
  if ((${#roles[@]})) && ! wait_roles_gone 1000 "${roles[@]}"; then
    for role in "${roles[@]}"; do signal_role "$role" KILL; done
    wait_roles_gone 3000 "${roles[@]}" || log "slurm daemons survived SIGKILL"
  fi
  for role in "${roles[@]}"; do
    if [[ "$role" == slurmd.* ]]; then kill_node_namespace "${role#slurmd.}" || true; fi
  done
  signal_role munged TERM
  if ! wait_roles_gone 3000 munged; then
    signal_role munged KILL
    wait_roles_gone 2000 munged || log "munged survived SIGKILL"
  fi
}

cmd_start() {
  [[ "$NODES" =~ ^[0-9]+$ ]] && ((NODES >= 1 && NODES <= MAX_NODES)) ||
    die "--nodes must be 1..$MAX_NODES"
  [[ "$CPUS" =~ ^[0-9]+$ ]] && ((CPUS >= 1)) || die "--cpus must be >= 1"
  [[ "$MEMORY" =~ ^[0-9]+$ ]] && ((MEMORY >= 1)) || die "--memory must be >= 1 (MB)"
  [[ "$SLURMD_TIMEOUT" =~ ^[0-9]+$ ]] && ((SLURMD_TIMEOUT >= 2)) || die "--slurmd-timeout must be >= 2"
  [[ -z "$PORT_BASE" ]] || { [[ "$PORT_BASE" =~ ^[0-9]+$ ]] && ((PORT_BASE >= 1024 && PORT_BASE + NODES <= 65535)); } ||
    die "--port-base must be 1024..$((65535 - NODES))"
  local t0
  t0=$(now_ms)
  for exe in munged slurmctld slurmd sinfo unshare setsid ss; do
    command -v "$exe" >/dev/null || die "$exe not found (run scripts/install-deps.sh)"
  done
  if [[ -z "$DIR" ]]; then
    DIR=$(mktemp -d /tmp/grpo-cluster.XXXXXX)
  else
    if [[ -e "$DIR" && -n "$(ls -A "$DIR" 2>/dev/null)" ]]; then
      [[ -f "$DIR/$MARKER" ]] || die "$DIR exists and is not a test-cluster directory"
      if ((REPLACE)); then
        log "stopping the cluster left in $DIR (--replace)"
        load_spool
        heal_all
        stop_daemons
        remove_cgroups
      fi
      if [[ -f "$DIR/pids" ]]; then
        local role pid start uts
        while read -r role pid start uts; do
          alive "$pid" "$start" &&
            die "a cluster is already running in $DIR ($role pid $pid); stop it or pass --replace"
        done <"$DIR/pids"
      fi
      load_spool
      remove_dirs
    fi
    mkdir -p "$DIR"
    DIR=$(cd "$DIR" && pwd -P)
  fi
  touch "$DIR/$MARKER"
  : >"$DIR/pids"
  make_cluster_cgroup
  if ((${#DIR} <= SOCKET_DIR_MAX)); then
    SPOOL=$DIR
  else
    SPOOL=$(mktemp -d /tmp/grpo-cluster-spool.XXXXXX)
    touch "$SPOOL/$MARKER"
    echo "$SPOOL" >"$DIR/spool.path"
  fi
  mkdir -p "$SPOOL/tmp" "$SPOOL/nodes" "$DIR/nodes"

  STARTED=0
  FAIL_REASON=""
  trap 'start_failed' EXIT
  trap 'FAIL_REASON="interrupted"; exit 1' INT TERM

  local base=$PORT_BASE
  [[ -n "$base" ]] || base=$(pick_ports)
  write_config "$base"
  log "starting $NODES nodes x $CPUS CPUs in $DIR (ports $base..$((base + NODES)))"

  start_munged
  local deadline=$(($(now_ms) + TIMEOUT * 1000))
  until munge -n -S "$SPOOL/munge/munge.socket.2" 2>/dev/null |
    unmunge -S "$SPOOL/munge/munge.socket.2" >/dev/null 2>&1; do
    check_daemons_alive || exit 1
    if (($(now_ms) > deadline)); then
      FAIL_REASON="munged did not answer within ${TIMEOUT}s"
      exit 1
    fi
    sleep 0.05
  done

  phase "munged answers"
  start_slurmctld
  deadline=$(($(now_ms) + TIMEOUT * 1000))
  until SLURM_CONF="$DIR/slurm.conf" scontrol ping 2>/dev/null | grep -q 'UP'; do
    check_daemons_alive || exit 1
    if (($(now_ms) > deadline)); then
      FAIL_REASON="slurmctld did not answer within ${TIMEOUT}s"
      exit 1
    fi
    sleep 0.05
  done

  phase "slurmctld answers"
  record_ctld_children
  local node
  local dirs=()
  for node in $(node_names); do dirs+=("$DIR/nodes/$node" "$SPOOL/nodes/$node/spool" "$SPOOL/tmp/$node"); done
  mkdir -p "${dirs[@]}"
  for node in $(node_names); do launch_slurmd "$node"; done
  phase "$NODES slurmd launched"
  # shellcheck disable=SC2046
  wait_nodes "$TIMEOUT" 'idle' $(node_names) || exit 1
  for node in $(node_names); do record_node_uts "$node"; done

  {
    echo "export SLURM_CONF=$DIR/slurm.conf"
    echo "export GRPO_TEST_CLUSTER_DIR=$DIR"
  } >"$DIR/env.sh"
  STARTED=1
  trap - EXIT INT TERM
  log "$NODES nodes idle after $(($(now_ms) - t0)) ms"
  cat "$DIR/env.sh"
}

start_failed() {
  ((STARTED)) && return 0
  # Another cluster (or anything else) took one of the randomly chosen ports between the check and
  # the bind: start again from scratch with other ports, at most twice.
  if [[ -z "$PORT_BASE" && "${GRPO_CLUSTER_ATTEMPT:-1}" -lt 3 ]] &&
    grep -qs "Address already in use" "$DIR"/ctld/slurmctld.log "$DIR"/nodes/*/slurmd.log; then
    log "a port was taken (Address already in use); retrying with other ports"
    stop_daemons
    remove_dirs
    GRPO_CLUSTER_ATTEMPT=$((${GRPO_CLUSTER_ATTEMPT:-1} + 1)) exec "$SELF" "${ORIG_ARGS[@]}"
  fi
  log "start FAILED: ${FAIL_REASON:-an unexpected error (see above)}"
  log_tails
  stop_daemons
  log "stopped what was started; logs kept in $DIR (remove with: $0 stop --dir $DIR)"
  exit 1
}

require_dir() {
  [[ -n "$DIR" ]] || die "--dir is required"
  DIR=$(cd "$DIR" 2>/dev/null && pwd -P) || return 1
  [[ -f "$DIR/$MARKER" ]] || die "$DIR is not a test-cluster directory (no $MARKER)"
  load_spool
}

# SPOOL of an existing cluster directory.
load_spool() {
  SPOOL=$DIR
  if [[ -f "$DIR/spool.path" ]]; then SPOOL=$(cat "$DIR/spool.path"); fi
  return 0
}

remove_dirs() {
  if [[ "$SPOOL" != "$DIR" && -f "$SPOOL/$MARKER" ]]; then rm -rf "$SPOOL"; fi
  rm -rf "$DIR"
}

cmd_stop() {
  [[ -n "$DIR" ]] || die "--dir is required"
  if [[ ! -e "$DIR" ]]; then
    log "nothing to stop: $DIR does not exist"
    return 0
  fi
  require_dir
  heal_all
  stop_daemons
  remove_cgroups
  if ((KEEP)); then
    log "stopped; kept $DIR"
  else
    remove_dirs
    log "stopped; removed $DIR"
  fi
}

cmd_status() {
  require_dir || die "$DIR does not exist"
  local role pid start uts bad=0
  while read -r role pid start uts; do
    if [[ "$role" == dead.* ]]; then
      echo "${role#dead.} killed"
      bad=1
    elif alive "$pid" "$start"; then
      echo "$role running pid $pid"
    else
      echo "$role DEAD (pid $pid)"
      bad=1
    fi
  done <"$DIR/pids"
  echo "--- sinfo"
  SLURM_CONF="$DIR/slurm.conf" sinfo -N -o '%N %P %t %c' || bad=1
  return $bad
}

check_node_arg() {
  [[ -n "$NODE" ]] || die "which node? (e.g. n2)"
  grep -q "^NodeName=$NODE " "$DIR/slurm.conf" || die "no node $NODE in $DIR/slurm.conf"
}

cmd_kill_node() {
  require_dir || die "$DIR does not exist"
  check_node_arg
  local pid start uts
  read -r pid start uts <<<"$(lookup "slurmd.$NODE")"
  [[ -n "${pid:-}" ]] || die "$NODE is not running (already killed?)"
  local victims
  victims=$(pids_in_uts "$uts" | wc -l)
  if alive "$pid" "$start"; then kill -KILL "$pid" 2>/dev/null || true; fi
  kill_node_namespace "$NODE" || die "could not kill every process on $NODE"
  sed -i "s/^slurmd\.$NODE /dead.slurmd.$NODE /" "$DIR/pids"
  log "killed $NODE: slurmd pid $pid and $((victims > 0 ? victims - 1 : 0)) other process(es)"
}

cmd_revive_node() {
  require_dir || die "$DIR does not exist"
  check_node_arg
  local pid start uts
  read -r pid start uts <<<"$(lookup "slurmd.$NODE")"
  if [[ -n "${pid:-}" ]] && alive "$pid" "$start"; then die "$NODE is running (pid $pid)"; fi
  sed -i "/^dead\.slurmd\.$NODE /d" "$DIR/pids"
  local t0
  t0=$(now_ms)
  launch_slurmd "$NODE"
  FAIL_REASON=""
  if ! wait_nodes "$TIMEOUT" 'idle|mix|alloc' "$NODE"; then
    log "$NODE did not come back: $FAIL_REASON"
    tail -n 15 "$DIR/nodes/$NODE/slurmd.log" >&2 || true
    signal_role "slurmd.$NODE" KILL
    sed -i "s/^slurmd\.$NODE /dead.slurmd.$NODE /" "$DIR/pids"
    exit 1
  fi
  record_node_uts "$NODE"
  log "revived $NODE in $(($(now_ms) - t0)) ms"
}

cmd_restart_ctld() {
  require_dir || die "$DIR does not exist"
  local t0
  t0=$(now_ms)
  signal_role slurmctld TERM
  if ! wait_roles_gone 10000 slurmctld; then
    signal_role slurmctld KILL
    wait_roles_gone 3000 slurmctld || die "slurmctld survived SIGKILL"
  fi
  start_slurmctld
  local deadline=$(($(now_ms) + TIMEOUT * 1000))
  until SLURM_CONF="$DIR/slurm.conf" scontrol ping 2>/dev/null | grep -q 'UP'; do
    (($(now_ms) < deadline)) || die "slurmctld did not answer within ${TIMEOUT} s after the restart"
    sleep 0.1
  done
  record_ctld_children
  log "restarted slurmctld in $(($(now_ms) - t0)) ms"
}

cmd_partition() {
  require_dir || die "$DIR does not exist"
  check_node_arg
  command -v nft >/dev/null || die "nft not found (run scripts/install-deps.sh)"
  local cg mnt rel level table
  cg=$(cluster_cgroup)
  [[ -n "$cg" && -d "$cg/$NODE" ]] ||
    die "$NODE has no cgroup (cgroup v2 is not mounted under /sys/fs/cgroup): cannot partition it"
  mnt=$(cgroup2_mount)
  rel=${cg#"$mnt"/}/$NODE # the node's path below the cgroup v2 root: its depth is the level
  level=$(tr -cd / <<<"$rel" | wc -c)
  table=$(partition_table "$NODE")
  heal_node "$NODE"
  # nft resolves the path under /sys/fs/cgroup.
  local match="socket cgroupv2 level $((level + 1)) \"${cg#/sys/fs/cgroup/}/$NODE\""
  nft -f - <<RULES || die "nft refused the partition rules of $NODE"
table inet $table {
  chain out { type filter hook output priority -10; $match drop; }
  chain in { type filter hook input priority -10; $match drop; }
}
RULES
  log "partitioned $NODE: its sockets' packets are dropped (heal: $0 heal --dir $DIR $NODE)"
}

cmd_heal() {
  require_dir || die "$DIR does not exist"
  if [[ -n "$NODE" ]]; then
    check_node_arg
    heal_node "$NODE"
    log "healed $NODE"
  else
    heal_all
    log "healed every partition"
  fi
}

cmd_wait_idle() {
  require_dir || die "$DIR does not exist"
  FAIL_REASON=""
  NODES=$(grep -c '^NodeName=' "$DIR/slurm.conf")
  # shellcheck disable=SC2046 # node names never contain spaces
  wait_nodes "$TIMEOUT" 'idle' $(node_names) || die "$FAIL_REASON"
}

# --- main -------------------------------------------------------------------------------------

[[ $# -ge 1 ]] || usage
SELF=$(readlink -f "$0")
MY_UTS=$(proc_uts $$)
ORIG_ARGS=("$@")
COMMAND=$1
shift
NODES=4
CPUS=4
MEMORY=16384
PORT_BASE=""
SLURMD_TIMEOUT=10
DIR=""
SPOOL=""
KEEP=0
REPLACE=0
TIMEOUT=30
NODE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) NODES=${2:?--nodes needs a value}; shift 2 ;;
    --cpus) CPUS=${2:?--cpus needs a value}; shift 2 ;;
    --memory) MEMORY=${2:?--memory needs a value}; shift 2 ;;
    --port-base) PORT_BASE=${2:?--port-base needs a value}; shift 2 ;;
    --slurmd-timeout) SLURMD_TIMEOUT=${2:?--slurmd-timeout needs a value}; shift 2 ;;
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --timeout) TIMEOUT=${2:?--timeout needs a value}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --replace) REPLACE=1; shift ;;
    -h | --help) usage ;;
    n[0-9]*) NODE=$1; shift ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] && ((TIMEOUT >= 1)) || die "--timeout must be >= 1 (seconds)"

case "$COMMAND" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill-node) cmd_kill_node ;;
  revive-node) cmd_revive_node ;;
  wait-idle) cmd_wait_idle ;;
  restart-ctld) cmd_restart_ctld ;;
  partition) cmd_partition ;;
  heal) cmd_heal ;;
  *) usage ;;
esac
