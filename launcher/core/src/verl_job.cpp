#include "grpo/core/verl_job.h"

#include <algorithm>

#include "grpo/core/shell_quote.h"

namespace grpo::core {

namespace {

// The same entry points `check` recognises (checker.cpp is_entry_point).
bool is_verl_entry(const std::string& word) {
  if (word == "verl.trainer.main_ppo") return true;
  if (word.rfind("recipe.", 0) == 0 && word.find(".main_") != std::string::npos) return true;
  const auto slash = word.rfind('/');
  const std::string base = slash == std::string::npos ? word : word.substr(slash + 1);
  return base.rfind("main_ppo", 0) == 0 && base.size() > 3 &&
         base.compare(base.size() - 3, 3, ".py") == 0 && word.find("verl") != std::string::npos;
}

bool is_python(const std::string& word) {
  const auto slash = word.rfind('/');
  const std::string base = slash == std::string::npos ? word : word.substr(slash + 1);
  return base.rfind("python", 0) == 0;
}

SourceLocation at(const ShellWord& w, const ParsedScript& s) {
  return {w.file.empty() ? s.file : w.file, w.line, w.column};
}

Error unresolved(const ShellWord& w, const ParsedScript& s, const std::string& what) {
  return make_error(
      ErrorKind::kInvalidValue,
      what + " '" + w.text + "' is not known before the job starts (" +
          (w.unresolved_why.empty() ? std::string("not resolved statically") : w.unresolved_why) +
          "): write the value in the script or pass it with --set to check",
      at(w, s));
}

std::string value_of(const std::string& override_text) {
  const auto eq = override_text.find('=');
  return eq == std::string::npos ? std::string() : override_text.substr(eq + 1);
}

std::string key_of(const std::string& override_text) {
  std::string k = override_text.substr(0, override_text.find('='));
  while (!k.empty() && (k.front() == '+' || k.front() == '~')) k.erase(0, 1);
  return k;
}

// `text` as a comment line: no newline can end the comment.
std::string comment_text(const std::string& text) {
  std::string out;
  for (char c : text) out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  return out;
}

}  // namespace

Result<VerlDriver> verl_driver(const ParsedScript& script) {
  for (const auto& cmd : script.commands) {
    std::size_t entry = cmd.words.size();
    for (std::size_t i = 0; i < cmd.words.size(); ++i) {
      if (is_verl_entry(cmd.words[i].text)) {
        entry = i;
        break;
      }
    }
    if (entry == cmd.words.size()) continue;
    VerlDriver d;
    d.file = cmd.file.empty() ? script.file : cmd.file;
    d.line = cmd.line;
    // The interpreter: the last python word before the entry point; `python3 -m` by default.
    std::size_t first = entry;
    for (std::size_t i = entry; i-- > 0;) {
      if (is_python(cmd.words[i].text)) {
        first = i;
        break;
      }
    }
    if (first == entry) {
      d.command = {"python3"};
      if (cmd.words[entry].text.find('/') == std::string::npos) d.command.push_back("-m");
    }
    for (std::size_t i = first; i <= entry; ++i) {
      const ShellWord& w = cmd.words[i];
      if (w.unresolved) return unresolved(w, script, "the driver's word");
      if (has_nul(w.text)) return make_error(ErrorKind::kInvalidValue, "a NUL byte", at(w, script));
      d.command.push_back(w.text);
    }
    for (std::size_t i = entry + 1; i < cmd.words.size(); ++i) {
      const ShellWord& w = cmd.words[i];
      if (w.from_args) continue;  // "$@": nothing is passed at submit time
      if (w.unresolved) return unresolved(w, script, "the override");
      if (has_nul(w.text)) return make_error(ErrorKind::kInvalidValue, "a NUL byte", at(w, script));
      const std::string key = key_of(w.text);
      if (key == "trainer.resume_mode") {
        d.resume_mode = value_of(w.text);
        continue;
      }
      if (key == "trainer.default_local_dir") d.checkpoint_dir = value_of(w.text);
      if (key == "trainer.total_training_steps") {
        const std::string v = value_of(w.text);
        const bool digits =
            !v.empty() && v.size() < 18 &&
            std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
        d.total_steps = digits ? std::stoll(v) : 0;
      }
      d.overrides.push_back(w.text);
    }
    std::map<std::string, ShellAssignment> env;
    if (cmd.exported) env = *cmd.exported;
    for (const auto& p : cmd.prefix) env[p.name] = p;
    for (const auto& [name, a] : env) {
      if (!is_env_name(name)) continue;
      if (a.value.unresolved) return unresolved(a.value, script, "the exported " + name);
      if (has_nul(a.value.text)) {
        return make_error(ErrorKind::kInvalidValue, "a NUL byte in " + name, at(a.value, script));
      }
      d.env.emplace_back(name, a.value.text);
    }
    return d;
  }
  return make_error(ErrorKind::kParse,
                    "no verl entry point (python3 -m verl.trainer.main_ppo ...) found: not a "
                    "verl launch script",
                    {script.file, 0, 0});
}

Result<std::string> verl_attempt_script(const VerlDriver& driver, const VerlAttemptOptions& o) {
  for (const auto* s : {&o.run_dir, &o.checkpoint_dir}) {
    if (has_nul(*s)) return make_error(ErrorKind::kInvalidValue, "a path contains a NUL byte");
  }
  std::string s;
  s += "#!/bin/bash\n";
  s += "# Generated by grpo-launch " + comment_text(o.version) + ": one attempt of the verl run " +
       "of " + comment_text(driver.file) + ":" + std::to_string(driver.line) + ".\n";
  s += R"(# `grpo-launch supervise` runs it once per attempt on the batch host (the Ray head): it
# stops what an earlier attempt left of Ray, starts the head here and one `ray start --block`
# per other node through srun, waits until `ray status` counts every node, runs the driver and
# tears Ray down again. Ports and the temp dir are this job's own. docs/verl.md.
set -u
)";
  s += "nodes=" + std::to_string(o.nodes) + "\n";
  s += "gpus_per_node=" + std::to_string(o.gpus_per_node) + "\n";
  s += "run_dir=" + shell_quote(o.run_dir) + "\n";
  s += "driver=(" + shell_join(driver.command) + ")\n";
  s += "overrides=(\n";
  for (const auto& v : driver.overrides) s += "  " + shell_quote(v) + "\n";
  if (driver.checkpoint_dir.empty()) {
    s += "  " + shell_quote("trainer.default_local_dir=" + o.checkpoint_dir) + "\n";
  }
  s += ")\n";
  s += "first_resume_mode=" + shell_quote(driver.resume_mode) + "\n";
  s += R"DELIM(ray=ray
srun=srun
attempt=${GRPO_ATTEMPT:-1}
log() { echo "grpo-launch verl: $*" >&2; }
# Telemetry for the supervisor (docs/telemetry.md) on stdout: `done` when the driver finished
# (the teardown that follows is not a hang), `ERROR` when the attempt failed.
event() { printf '%s\n' "$1"; }

# This job's ports and temp dir: 256 ports per job, from its job id (locally the supervisor's
# pid), between 12000 and 32767 (below Linux's ephemeral range); two jobs collide only when
# their ids are equal modulo 80 and they share a node. The temp dir stays short: Ray's unix
# sockets live below it and a socket path may not exceed 107 bytes.
key=${SLURM_JOB_ID:-$PPID}
[[ $key =~ ^[0-9]+$ ]] || key=0
base=$((12000 + (key % 80) * 256))
temp_dir=/tmp/grpo-ray-${SLURM_JOB_ID:-local$PPID}
node_args=(--num-gpus="$gpus_per_node"
  --node-manager-port=$((base + 2)) --object-manager-port=$((base + 3))
  --dashboard-agent-listen-port=$((base + 5)) --dashboard-agent-grpc-port=$((base + 6))
  --metrics-export-port=$((base + 7)) --runtime-env-agent-port=$((base + 8))
  --min-worker-port=$((base + 16)) --max-worker-port=$((base + 255)))

if [[ ${1:-} == --ray-node ]]; then
  # A worker node, inside its own srun step: Ray in the foreground until the step ends.
  exec "$ray" start --address="$2" --num-cpus="${SLURM_CPUS_ON_NODE:-$(nproc)}" \
    "${node_args[@]}" --block
fi

# The nodes: the supervisor passes the allocation (GRPO_VERL_NODES); without it, Slurm's node
# list; without Slurm, this machine only.
here=${SLURMD_NODENAME:-$(hostname -s)}
if [[ -n ${GRPO_VERL_NODES:-} ]]; then
  read -r -a all_nodes <<<"$GRPO_VERL_NODES"
elif [[ -n ${SLURM_JOB_NODELIST:-} ]]; then
  mapfile -t all_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
else
  all_nodes=("$here")
fi
workers=()
for n in "${all_nodes[@]}"; do [[ $n == "$here" ]] || workers+=("$n"); done
if ((${#workers[@]} + 1 < nodes)); then
  log "the run needs $nodes nodes (trainer.nnodes), the allocation has $((${#workers[@]} + 1))"
  exit 2
fi
workers=("${workers[@]:0:nodes-1}")

stop_ray() {
  "$ray" stop --force >/dev/null 2>&1
  if ((${#workers[@]} > 0)); then
    local list
    list=$(IFS=,; echo "${workers[*]}")
    "$srun" --nodes=${#workers[@]} --ntasks=${#workers[@]} --ntasks-per-node=1 \
      --nodelist="$list" --overlap "$ray" stop --force >/dev/null 2>&1
  fi
}

driver_pid= torn_down=
ray_pids=()
teardown() {
  [[ -n $torn_down ]] && return
  torn_down=1
  [[ -n $driver_pid ]] && kill -TERM "$driver_pid" 2>/dev/null
  stop_ray
  for p in "${ray_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait
}
trap 'teardown; exit 143' TERM
trap 'teardown; exit 130' INT
trap 'teardown; exit 129' HUP
trap '' USR2 # verl saves on its own before the end (MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP)

# What an earlier attempt (killed, or lost with its node) left of Ray goes first.
stop_ray

ip=127.0.0.1
if [[ -n ${SLURM_JOB_ID:-} ]]; then
  ip=$(hostname --ip-address | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) {print $i; exit}}')
  [[ -n $ip ]] || ip=$(hostname --ip-address | awk '{print $1}')
fi
address=$ip:$base
log "attempt $attempt: Ray head on $here ($address, temp dir $temp_dir), ${#workers[@]} worker node(s)"
"$ray" start --head --node-ip-address="$ip" --port="$base" --dashboard-port=$((base + 1)) \
  --ray-client-server-port=$((base + 4)) --temp-dir="$temp_dir" \
  --num-cpus="${SLURM_CPUS_ON_NODE:-$(nproc)}" "${node_args[@]}" --block &
ray_pids+=($!)

# `ray status` counts the nodes that joined; wait_for N waits until N have (exit 3 when a Ray
# node ends first or GRPO_RAY_START_TIMEOUT, 600 s, passes).
deadline=$((SECONDS + ${GRPO_RAY_START_TIMEOUT:-600}))
wait_for() {
  while :; do
    joined=$("$ray" status --address="$address" 2>/dev/null | awk '
      /^(Active|Idle):/ { on = 1; next }
      /^[^ ]/ { on = 0 }
      on && $2 ~ /^node_/ { n += $1 }
      END { print n + 0 }')
    ((joined >= $1)) && return 0
    for p in "${ray_pids[@]}"; do
      if ! kill -0 "$p" 2>/dev/null; then
        log "a Ray node ended before the cluster was up ($joined of $nodes joined)"
        event '{"type":"ERROR","message":"a Ray node ended before the cluster was up"}'
        teardown
        exit 3
      fi
    done
    if ((SECONDS >= deadline)); then
      log "only $joined of $nodes Ray nodes joined within ${GRPO_RAY_START_TIMEOUT:-600} s"
      event '{"type":"ERROR","message":"not every Ray node joined in time"}'
      teardown
      exit 3
    fi
    sleep 0.5
  done
}
# The workers join a head that answers.
wait_for 1
for n in "${workers[@]}"; do
  "$srun" --nodes=1 --ntasks=1 --nodelist="$n" --overlap --kill-on-bad-exit=1 \
    "$0" --ray-node "$address" &
  ray_pids+=($!)
done
# Every node must join before the driver starts.
wait_for "$nodes"
log "Ray is up: $joined node(s)"

# The driver, on the head. A restart resumes from verl's newest checkpoint.
resume=()
if ((attempt > 1)); then
  resume=(trainer.resume_mode=auto)
elif [[ -n $first_resume_mode ]]; then
  resume=("trainer.resume_mode=$first_resume_mode")
fi
export RAY_ADDRESS=$address
PYTHONUNBUFFERED=1 "${driver[@]}" "${overrides[@]}" "${resume[@]}" &
driver_pid=$!
# The driver ends, or a Ray node does first (its node was lost): either ends the attempt.
while :; do
  wait -n -p ended "$driver_pid" "${ray_pids[@]}"
  status=$?
  [[ -n ${ended:-} ]] && break
done
if [[ $ended == "$driver_pid" ]]; then
  driver_pid=
  log "the driver exited with status $status"
  if ((status == 0)); then
    event '{"type":"done"}'
  else
    event "{\"type\":\"ERROR\",\"message\":\"the verl driver exited with status $status\"}"
  fi
else
  log "a Ray node ended (status $status) while the driver ran: the attempt stops"
  event '{"type":"ERROR","message":"a Ray node ended while the driver ran (a lost node?)"}'
  status=4
fi
teardown
exit "$status"
)DELIM";
  return s;
}

Result<SbatchView> make_verl_sbatch_view(const VerlDriver& driver, const ClusterProfile& profile,
                                         int nodes, int gpus_per_node, const std::string& name,
                                         const SbatchRunOptions& options) {
  if (nodes <= 0) return make_error(ErrorKind::kInvalidValue, "trainer.nnodes must be at least 1");
  if (options.run_dir.empty() || options.run_dir.front() != '/') {
    return make_error(ErrorKind::kInternal, "run directory must be absolute");
  }
  SbatchView v;
  v.version = options.version;
  v.profile_name = sanitize_name(profile.name);
  v.model_name = sanitize_name(name);
  v.job_name = "verl-" + v.model_name;
  v.nodes = std::to_string(nodes);
  v.ntasks_per_node = "1";
  ClusterProfile c = profile;
  c.gpus_per_node = gpus_per_node;
  if (gpus_per_node <= 0) c.device.vendor = DeviceVendor::kCpu;  // no --gpus-per-node line
  GRPO_TRY_STATUS(fill_sbatch_directives(c, 1, options.run_dir, v));
  for (const auto& [n, value] : driver.env) {
    if (!is_env_name(n)) {
      return make_error(ErrorKind::kInvalidValue,
                        "exported name \"" + printable(n) + "\" is not a valid variable name",
                        {driver.file, driver.line, 0});
    }
    if (n == "GRPO_RUN_DIR" || n == "GRPO_RUN_ID" || n == "GRPO_PLAN_FILE") {
      return make_error(ErrorKind::kInvalidValue, n + " is set by grpo-launch",
                        {driver.file, driver.line, 0});
    }
    v.env.push_back({n, shell_quote(value)});
  }
  for (const auto* text : {&options.launcher_path, &options.run_id, &options.run_dir}) {
    if (has_nul(*text)) return make_error(ErrorKind::kInvalidValue, "a path contains a NUL byte");
  }
  v.env.push_back({"GRPO_RUN_DIR", shell_quote(options.run_dir)});
  v.env.push_back({"GRPO_RUN_ID", shell_quote(options.run_id)});
  v.launcher = shell_quote(options.launcher_path);
  v.run_dir = shell_quote(options.run_dir);
  return v;
}

}  // namespace grpo::core
