#include "grpo/plan/env_contract.h"

#include <set>

#include <algorithm>

namespace grpo::core {
namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.rfind(prefix, 0) == 0;
}

// What the plan's variables and checks depend on.
struct PlanFacts {
  int cores_per_rank = 1;
  bool megatron_tp = false;  // Megatron-Core's TP / CP
  bool multi_node = false;
};

PlanFacts plan_facts(const ClusterProfile& c, const Layout& l) {
  PlanFacts f;
  f.cores_per_rank = c.host.cpu_cores > 0 ? std::max(1, c.host.cpu_cores / c.gpus_per_node) : 1;
  // Megatron-Core's TP / CP (FSDP's Ulysses size rides in CP but needs no ordered queue).
  f.megatron_tp = l.backend != Backend::kFsdp && (l.dims.tp > 1 || l.dims.cp > 1);
  f.multi_node = c.nodes > 1;
  return f;
}

void report_conflict(EnvContract& env, std::string var, std::string msg, std::string hint,
                     Severity sev = Severity::kError) {
  Diagnostic d = make_diag(DiagCode::kEnvConflict, "env." + var, std::move(msg), std::move(hint));
  d.severity = sev;
  env.diagnostics.push_back(std::move(d));
}

// The collective library's settings for the device vendor: NCCL / HCCL / Gloo interfaces, the
// visible devices, and the hardware queue Megatron-Core needs.
void add_device_env(EnvMap& job, const ClusterProfile& c, const PlanFacts& f) {
  switch (c.device.vendor) {
    case DeviceVendor::kNvidia: {
      const bool ib = c.network.inter_node == InterFabric::kInfiniband ||
                      c.network.inter_node == InterFabric::kRoce;
      if (ib && !c.network.ib_hcas.empty()) job["NCCL_IB_HCA"] = join(c.network.ib_hcas, ",");
      if (f.multi_node && c.network.inter_node == InterFabric::kEthernet)
        job["NCCL_IB_DISABLE"] = "1";
      if (!c.network.socket_ifname.empty()) {
        job["NCCL_SOCKET_IFNAME"] = c.network.socket_ifname;
        job["GLOO_SOCKET_IFNAME"] = c.network.socket_ifname;
      }
      // Megatron-Core orders TP/CP communication behind compute on one hardware queue.
      if (f.megatron_tp) job["CUDA_DEVICE_MAX_CONNECTIONS"] = "1";
      break;
    }
    case DeviceVendor::kAscend: {
      if (!c.network.socket_ifname.empty()) {
        job["HCCL_SOCKET_IFNAME"] = c.network.socket_ifname;
        job["GLOO_SOCKET_IFNAME"] = c.network.socket_ifname;
      }
      std::vector<std::string> devices;
      for (int i = 0; i < c.gpus_per_node; ++i) devices.push_back(std::to_string(i));
      job["ASCEND_RT_VISIBLE_DEVICES"] = join(devices, ",");
      if (f.megatron_tp)
        job["CUDA_DEVICE_MAX_CONNECTIONS"] = "1";  // read by MindSpeed/Megatron on NPU too
      break;
    }
    case DeviceVendor::kCpu: {
      if (!c.network.socket_ifname.empty()) job["GLOO_SOCKET_IFNAME"] = c.network.socket_ifname;
      break;
    }
  }
}

// The plan's parallel layout, for trainers that build their own process groups from it
// (torchrun-style programs started with --trainer-cmd; docs/env-contract.md). The micro batch
// is not here: the supervisor changes it after an OOM and passes it on the command line.
void add_layout_env(EnvMap& job, const Layout& l) {
  job["GRPO_TP"] = std::to_string(l.dims.tp);
  job["GRPO_PP"] = std::to_string(l.dims.pp);
  job["GRPO_CP"] = std::to_string(l.dims.cp);
  job["GRPO_DP"] = std::to_string(l.dims.dp);
  job["GRPO_EP"] = std::to_string(l.dims.ep);
  job["GRPO_ETP"] = std::to_string(l.dims.etp);
  job["GRPO_SEQUENCE_PARALLEL"] = l.sequence_parallel ? "1" : "0";
  job["GRPO_ROLLOUT_TP"] = std::to_string(l.rollout_tp);
  job["GRPO_FIRST_STAGE_LAYERS"] = std::to_string(l.first_stage_layers);
  job["GRPO_LAST_STAGE_LAYERS"] = std::to_string(l.last_stage_layers);
}

// Warnings for a profile setting that is kept but probably wrong: IB disabled on InfiniBand, or
// another vendor's variable.
void warn_profile_var(EnvContract& env, const ClusterProfile& c, const PlanFacts& f,
                      const std::string& var, const std::string& value) {
  if (var == "NCCL_IB_DISABLE" && value == "1" && f.multi_node &&
      c.network.inter_node == InterFabric::kInfiniband) {
    report_conflict(
        env, var,
        "NCCL_IB_DISABLE=1 on an InfiniBand cluster: inter-node traffic falls back to TCP "
        "sockets",
        "remove NCCL_IB_DISABLE", Severity::kWarning);
  }
  if (c.device.vendor == DeviceVendor::kNvidia &&
      (starts_with(var, "HCCL_") || starts_with(var, "ASCEND_"))) {
    report_conflict(env, var, var + " is an Ascend setting on an NVIDIA cluster", "remove it",
                    Severity::kWarning);
  }
  if (c.device.vendor == DeviceVendor::kAscend &&
      (starts_with(var, "NCCL_") || var == "CUDA_VISIBLE_DEVICES")) {
    report_conflict(env, var,
                    var + " is an NVIDIA setting on an Ascend cluster (HCCL does not read it)",
                    "use the HCCL_* / ASCEND_RT_VISIBLE_DEVICES equivalent", Severity::kWarning);
  }
}

// Whether the profile's `var=value` is kept: not when it contradicts what the plan needs (an
// ENV_CONFLICT error). Reports the warnings of what it keeps.
bool keep_profile_var(EnvContract& env, const ClusterProfile& c, const Layout& l,
                      const PlanFacts& f, const std::string& var, const std::string& value) {
  const EnvMap& job = env.job;
  const auto derived = job.find(var);
  if (var == "CUDA_DEVICE_MAX_CONNECTIONS" && f.megatron_tp && value != "1") {
    report_conflict(env, var,
                    "CUDA_DEVICE_MAX_CONNECTIONS=" + value + " but the plan uses TP=" +
                        std::to_string(l.dims.tp) + (l.dims.cp > 1 ? " and CP>1" : "") +
                        ", which Megatron-Core runs with CUDA_DEVICE_MAX_CONNECTIONS=1",
                    "remove it from the profile's [env] or set it to 1");
    return false;
  }
  if (var == "OMP_NUM_THREADS") {
    const int n = std::atoi(value.c_str());
    if (n > f.cores_per_rank) {
      report_conflict(
          env, var,
          "OMP_NUM_THREADS=" + value + " exceeds the " + std::to_string(f.cores_per_rank) +
              " cores per rank (" + std::to_string(c.host.cpu_cores) + " cores / " +
              std::to_string(c.gpus_per_node) + " ranks)",
          "set OMP_NUM_THREADS <= " + std::to_string(f.cores_per_rank), Severity::kWarning);
    }
  } else if (derived != job.end() && derived->second != value) {
    report_conflict(env, var,
                    var + "=" + value + " in the profile's [env] contradicts " + var + "=" +
                        derived->second + " derived from the profile's [network] and the plan",
                    "change one of them so they agree");
    return false;
  }
  warn_profile_var(env, c, f, var, value);
  if (var == "CUDA_VISIBLE_DEVICES" || var == "ASCEND_RT_VISIBLE_DEVICES") {
    const auto count = 1 + std::count(value.begin(), value.end(), ',');
    if (count != c.gpus_per_node) {
      report_conflict(
          env, var,
          var + "=" + value + " exposes " + std::to_string(count) +
              " devices but the plan places " + std::to_string(c.gpus_per_node) + " ranks per node",
          "expose exactly " + std::to_string(c.gpus_per_node) + " devices or change gpus_per_node");
      return false;
    }
  }
  return true;
}

}  // namespace

const std::vector<std::string>& per_rank_variables() {
  static const std::vector<std::string> vars = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK"};
  return vars;
}

EnvContract build_env(const ClusterProfile& c, const Layout& l) {
  EnvContract env;
  const PlanFacts f = plan_facts(c, l);
  env.job["OMP_NUM_THREADS"] = std::to_string(f.cores_per_rank);
  add_device_env(env.job, c, f);
  add_layout_env(env.job, l);
  // The profile's own settings: kept, unless they contradict what the plan needs.
  for (const auto& [var, value] : c.env) {
    if (keep_profile_var(env, c, l, f, var, value)) env.job[var] = value;
  }
  env.node.assign(static_cast<std::size_t>(c.nodes), EnvMap{});
  return env;
}

EnvMap rank_env(const EnvContract& env, const RankMap& map, int global_rank) {
  EnvMap out = env.job;
  const RankCoords& r = map.ranks.at(static_cast<std::size_t>(global_rank));
  if (static_cast<std::size_t>(r.node_rank) < env.node.size()) {
    for (const auto& [k, v] : env.node[static_cast<std::size_t>(r.node_rank)]) out[k] = v;
  }
  out["RANK"] = std::to_string(r.global_rank);
  out["LOCAL_RANK"] = std::to_string(r.local_rank);
  out["WORLD_SIZE"] = std::to_string(map.world_size());
  out["LOCAL_WORLD_SIZE"] = std::to_string(map.ranks_per_node);
  out["GROUP_RANK"] = std::to_string(r.node_rank);
  out["NODE_RANK"] = std::to_string(r.node_rank);
  return out;
}

}  // namespace grpo::core
