#include "grpo/verl/verl_job.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "grpo/core/text.h"
#include "grpo/core/verl_keys.h"
#include "grpo/shell/shell_quote.h"

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

// The items of a Hydra list value as verl's logger takes it: [a,b], ['a', "b"], or one name.
std::optional<std::vector<std::string>> hydra_names(const std::string& value) {
  if (value.find("${") != std::string::npos) return std::nullopt;  // an interpolation
  std::string v(trim(value));
  const bool list = v.size() >= 2 && v.front() == '[' && v.back() == ']';
  if (list) v = v.substr(1, v.size() - 2);
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= v.size()) {
    const auto comma = v.find(',', pos);
    std::string item(
        trim(v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    pos = comma == std::string::npos ? v.size() + 1 : comma + 1;
    if (item.size() >= 2 && (item.front() == '\'' || item.front() == '"') &&
        item.back() == item.front()) {
      item = item.substr(1, item.size() - 2);
    }
    if (item.empty()) {
      if (list && out.empty() && comma == std::string::npos) break;  // []
      return std::nullopt;
    }
    if (!std::all_of(item.begin(), item.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        })) {
      return std::nullopt;
    }
    out.push_back(item);
  }
  return out;
}

bool is_null(const std::string& v) {
  const std::string t(trim(v));
  return t.empty() || t == "null" || t == "None" || t == "~";
}

// The rules of verl_driver's header comment, on the overrides read.
Status supervision_rules(VerlDriver& d) {
  const SourceLocation where{d.file, d.line, 0};
  bool logger_seen = false, save_seen = false;
  std::vector<std::string> kept;
  for (std::string& o : d.overrides) {
    const std::string key = key_of(o);
    const std::string value = value_of(o);
    if (key == verl_key::kLogger) {
      logger_seen = true;
      auto names = hydra_names(value);
      if (!names) {
        return make_error(ErrorKind::kInvalidValue,
                          std::string(verl_key::kLogger) + "=" + printable(value) +
                              ": cannot tell whether it holds \"console\" (write the list, "
                              "e.g. trainer.logger='[\"console\",\"wandb\"]')",
                          where);
      }
      if (std::find(names->begin(), names->end(), "console") == names->end()) {
        names->insert(names->begin(), "console");
        std::string list;
        for (const auto& n : *names) list += (list.empty() ? "" : ",") + ("\"" + n + "\"");
        o = o.substr(0, o.find('=') + 1) + "[" + list + "]";
        d.notes.push_back(
            "trainer.logger gets \"console\": its step lines are what the supervisor watches");
      }
    } else if (key == verl_key::kSaveFreq) {
      save_seen = true;
      const std::string v(trim(value));
      const bool negative = !v.empty() && v.front() == '-';
      const std::string digits = negative ? v.substr(1) : v;
      if (digits.empty() || digits.size() > 9 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return make_error(
            ErrorKind::kInvalidValue,
            std::string(verl_key::kSaveFreq) + "=" + printable(value) + " is not a whole number",
            where);
      }
      d.save_freq = negative ? -std::stoll(digits) : std::stoll(digits);
    } else if (key == "trainer.default_hdfs_dir" && !is_null(value)) {
      d.hdfs = true;
      d.notes.push_back(
          "trainer.default_hdfs_dir is set: verl cannot resume from it (ray_trainer.py "
          "_load_checkpoint raises NotImplementedError), so every restart starts from the base "
          "model");
    } else if (key.rfind("ray_kwargs.ray_init.", 0) == 0 && !is_null(value)) {
      const std::string name = key.substr(std::string("ray_kwargs.ray_init.").size());
      if (name == "num_cpus" || name == "num_gpus" || name == "resources" || name == "labels" ||
          name == "object_store_memory" || name == "_node_name") {
        d.notes.push_back(o +
                          " dropped: ray.init refuses it when joining the job's Ray cluster, "
                          "whose nodes get the allocation's CPUs and GPUs");
        continue;
      }
    }
    kept.push_back(std::move(o));
  }
  d.overrides = std::move(kept);
  (void)logger_seen;  // verl's default logger is ["console", "wandb"]
  if (!save_seen || d.save_freq <= 0) {
    const std::int64_t was = save_seen ? d.save_freq : -1;
    d.save_freq = d.total_steps > 0 ? std::max<std::int64_t>(1, d.total_steps / 10) : 10;
    const std::string set = std::string(verl_key::kSaveFreq) + "=" + std::to_string(d.save_freq);
    auto it = std::find_if(d.overrides.begin(), d.overrides.end(),
                           [](const std::string& o) { return key_of(o) == verl_key::kSaveFreq; });
    if (it != d.overrides.end()) {
      *it = set;
    } else {
      d.overrides.push_back(set);
    }
    d.notes.push_back(set + " (was " + std::to_string(was) +
                      "): verl saves nothing without it, not even before the job's end, and "
                      "every restart would start over");
  }
  return ok_status();
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
      if (key == verl_key::kTotalTrainingSteps) {
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
    GRPO_TRY_STATUS(supervision_rules(d));
    return d;
  }
  return make_error(ErrorKind::kParse,
                    "no verl entry point (python3 -m verl.trainer.main_ppo ...) found: not a "
                    "verl launch script",
                    {script.file, 0, 0});
}

namespace {

// The script's header: what generated it, how the supervisor runs it, and `set -u`.
void append_header(std::string& s, const VerlDriver& driver, const VerlAttemptOptions& o) {
  s += "#!/bin/bash\n";
  s += "# Generated by grpo-launch " + comment_text(o.version) + ": one attempt of the verl run " +
       "of " + comment_text(driver.file) + ":" + std::to_string(driver.line) + ".\n";
  s += R"(# `grpo-launch supervise` runs it once per attempt on the batch host (the Ray head):
#   verl-attempt.sh [--attempt N] [--resume-mode MODE]
# It ends what an earlier attempt of this run left of Ray (only that: the processes naming that
# attempt's temp dir), starts the head here with a fresh temp dir (mktemp) and one
# `ray start --block` per other node in its own srun step, waits until `ray status` counts every
# node, runs the driver and stops its own Ray nodes again. docs/verl.md.
set -u
)";
}

// The run's values, shell-quoted: node and GPU counts, run dir, driver, overrides (with the
// checkpoint dir when the script sets none) and the script's resume mode.
void append_run_values(std::string& s, const VerlDriver& driver, const VerlAttemptOptions& o) {
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
  s += "resume_mode=" + shell_quote(driver.resume_mode) + "\n";
}

// The script's fixed settings and its log / event helpers.
void append_shell_helpers(std::string& s) {
  s += R"DELIM(ray=ray
srun=srun
attempt=1
log() { echo "grpo-launch verl: $*" >&2; }
# Telemetry for the supervisor (docs/telemetry.md) on stdout: `done` when the driver finished
# (the teardown that follows is not a hang), `ERROR` when the attempt failed.
event() { printf '%s\n' "$1"; }
)DELIM";
}

// The job's ports, from its job id, and the arguments every Ray node starts with.
void append_ports(std::string& s) {
  s += R"DELIM(
# This job's ports: 256 per job, from its job id (locally the supervisor's pid), between 12000
# and 32767 (below Linux's ephemeral range); two jobs collide only when their ids are equal
# modulo 80 and they share a node. Every port Ray opens is one of them except the autoscaler's
# metrics port (44217, no flag). docs/verl.md lists them.
key=${SLURM_JOB_ID:-$PPID}
[[ $key =~ ^[0-9]+$ ]] || key=0
base=$((12000 + (key % 80) * 256))
node_args=(--num-gpus="$gpus_per_node"
  --node-manager-port=$((base + 2)) --object-manager-port=$((base + 3))
  --dashboard-agent-listen-port=$((base + 5)) --dashboard-agent-grpc-port=$((base + 6))
  --metrics-export-port=$((base + 7)) --runtime-env-agent-port=$((base + 8))
  --min-worker-port=$((base + 16)) --max-worker-port=$((base + 255)))
cpus=${SLURM_CPUS_PER_TASK:-${SLURM_CPUS_ON_NODE:-$(nproc)}}
)DELIM";
}

// A worker node's re-entry (--ray-node) and the supervisor's arguments.
void append_arguments(std::string& s) {
  s += R"DELIM(
if [[ ${1:-} == --ray-node ]]; then
  # A worker node, inside its own srun step: Ray in the foreground until the step ends (Slurm
  # ends every process of the step with it).
  exec "$ray" start --address="$2" --num-cpus="$cpus" "${node_args[@]}" --block
fi
while (($#)); do
  case $1 in
    --attempt) attempt=$2; shift 2 ;;
    --resume-mode) resume_mode=$2; shift 2 ;;
    *) log "unknown argument: $1"; exit 2 ;;
  esac
done
)DELIM";
}

// The allocation's nodes: this one is the head, the others the workers.
void append_node_list(std::string& s) {
  s += R"DELIM(
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
)DELIM";
}

// Ends what earlier attempts left of Ray and makes this attempt's temp dir.
void append_leftover_cleanup(std::string& s) {
  s += R"DELIM(
# Ray's processes name their temp dir (raylet --session_dir, gcs_server, the workers), so what an
# attempt left behind (its `ray start --block` killed with SIGKILL) is found by it: this user's
# processes only, never another job's or user's (`ray stop` would stop every Ray process on the
# node: ray/scripts/scripts.py stop). The temp dirs of this run's attempts are listed in
# $run_dir/ray-temp-dirs. A short name: Ray's unix sockets live below it (107 bytes at most).
end_leftovers() { # temp dirs...
  local d i
  for d in "$@"; do
    [[ $d == /tmp/grpo-ray-* && -d $d ]] || continue
    pkill -TERM -u "$(id -u)" -f -- "$d" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
      pgrep -u "$(id -u)" -f -- "$d" >/dev/null || break
      sleep 0.1
    done
    pkill -KILL -u "$(id -u)" -f -- "$d" 2>/dev/null
    rm -rf -- "$d"
  done
}
if [[ -f $run_dir/ray-temp-dirs ]]; then
  mapfile -t earlier <"$run_dir/ray-temp-dirs"
  end_leftovers "${earlier[@]}"
fi
temp_dir=$(mktemp -d /tmp/grpo-ray-XXXXXX) || { log "cannot create a temp dir in /tmp"; exit 2; }
printf '%s\n' "$temp_dir" >>"$run_dir/ray-temp-dirs"
)DELIM";
}

// teardown() and the signal traps that call it.
void append_teardown(std::string& s) {
  s += R"DELIM(
driver_pid= torn_down=
ray_pids=()
# Stops what this attempt started: the driver, then every Ray node's `ray start --block` (which
# stops its raylet, GCS and workers on SIGTERM: ray/_private/node.py kill_all_processes; a worker
# node's srun step ends with it), then anything still naming the temp dir.
teardown() {
  [[ -n $torn_down ]] && return
  torn_down=1
  [[ -n $driver_pid ]] && kill -TERM "$driver_pid" 2>/dev/null
  local p
  for p in "${ray_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait
  end_leftovers "$temp_dir"
}
trap 'teardown; exit 143' TERM
trap 'teardown; exit 130' INT
trap 'teardown; exit 129' HUP
trap '' USR2 # verl saves on its own before the end (MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP)
)DELIM";
}

// Starts the Ray head on this node.
void append_ray_head(std::string& s) {
  s += R"DELIM(
ip=127.0.0.1
if [[ -n ${SLURM_JOB_ID:-} ]]; then
  ip=$(hostname --ip-address | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) {print $i; exit}}')
  [[ -n $ip ]] || ip=$(hostname --ip-address | awk '{print $1}')
fi
address=$ip:$base
log "attempt $attempt: Ray head on $here ($address, temp dir $temp_dir), ${#workers[@]} worker node(s)"
"$ray" start --head --node-ip-address="$ip" --port="$base" --dashboard-port=$((base + 1)) \
  --ray-client-server-port=$((base + 4)) --temp-dir="$temp_dir" \
  --num-cpus="$cpus" "${node_args[@]}" --block &
ray_pids+=($!)
)DELIM";
}

// wait_for N: waits until N Ray nodes have joined (exit 3 on a lost node or the timeout).
void append_wait_for(std::string& s) {
  s += R"DELIM(
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
)DELIM";
}

// One srun step per worker node, then the wait until every node has joined.
void append_ray_workers(std::string& s) {
  s +=
      R"DELIM(# The workers join a head that answers; each gets the node's CPUs (a step asks for one CPU per
# task unless told) and shares the allocation with the batch step (--overlap).
wait_for 1
for n in "${workers[@]}"; do
  "$srun" --nodes=1 --ntasks=1 --nodelist="$n" --cpus-per-task="$cpus" --overlap \
    --kill-on-bad-exit=1 "$0" --ray-node "$address" &
  ray_pids+=($!)
done
# Every node must join before the driver starts.
wait_for "$nodes"
log "Ray is up: $joined node(s)"
)DELIM";
}

// Runs the driver, waits for it or a lost Ray node, reports the outcome and tears down.
void append_driver_run(std::string& s) {
  s += R"DELIM(
# The driver, on the head, with the resume mode the supervisor chose (the script's own until the
# run has saved a checkpoint of its own, then auto: docs/verl.md "Restarts").
resume=()
[[ -n $resume_mode ]] && resume=("trainer.resume_mode=$resume_mode")
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
}

}  // namespace

Result<std::string> verl_attempt_script(const VerlDriver& driver, const VerlAttemptOptions& o) {
  for (const auto* s : {&o.run_dir, &o.checkpoint_dir}) {
    if (has_nul(*s)) return make_error(ErrorKind::kInvalidValue, "a path contains a NUL byte");
  }
  std::string s;
  append_header(s, driver, o);
  append_run_values(s, driver, o);
  append_shell_helpers(s);
  append_ports(s);
  append_arguments(s);
  append_node_list(s);
  append_leftover_cleanup(s);
  append_teardown(s);
  append_ray_head(s);
  append_wait_for(s);
  append_ray_workers(s);
  append_driver_run(s);
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
