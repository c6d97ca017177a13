#include "grpo/plan/plan_render.h"

#include <algorithm>
#include <cstdio>

#include "grpo/core/text.h"

namespace grpo::core {
namespace {

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}
std::string lpad(std::string s, std::size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}
std::string gib(double bytes) {
  return format_fixed(bytes / kGiB, 1);
}
std::string secs(double s) {
  return s >= 100 ? format_fixed(s, 0) : format_fixed(s, 1);
}

std::string dims_line(const Layout& l, const ModelSpec& m) {
  const auto& d = l.dims;
  std::string s = "TP=" + std::to_string(d.tp) + "  PP=" + std::to_string(d.pp) +
                  "  CP=" + std::to_string(d.cp) + "  DP=" + std::to_string(d.dp);
  if (m.is_moe()) {
    s += "  EP=" + std::to_string(d.ep) + "  ETP=" + std::to_string(d.etp) +
         "  EDP=" + std::to_string(d.edp());
  }
  return s;
}

std::string short_layout(const Layout& l, const ModelSpec& m) {
  const auto& d = l.dims;
  std::string s =
      "TP=" + std::to_string(d.tp) + " PP=" + std::to_string(d.pp) + " DP=" + std::to_string(d.dp);
  if (d.cp > 1) s += " CP=" + std::to_string(d.cp);
  if (m.is_moe()) s += " EP=" + std::to_string(d.ep) + " ETP=" + std::to_string(d.etp);
  s += ", rollout TP=" + std::to_string(l.rollout_tp) + ", micro batch " +
       std::to_string(l.micro_batch) + ", offload " + to_string(l.offload) + ", recompute " +
       std::string(to_string(l.recompute));
  return s;
}

const std::vector<std::string>& memory_rows() {
  static const std::vector<std::string> rows = {
      "actor weights", "actor gradients",   "actor optimizer states", "activations",
      "logits",        "reference weights", "rollout weights",        "rollout workspace",
      "KV cache",      "runtime overhead",  "rollout engine (kept)",  "rollout weights (kept)"};
  return rows;
}

bool has_item(const PhaseMemory& p, const std::string& name) {
  return std::any_of(p.items.begin(), p.items.end(),
                     [&](const MemoryItem& i) { return i.name == name; });
}

void render_memory(std::string& out, const Candidate& c, const WorkloadSpec& w) {
  const MemoryEstimate& m = c.memory;
  const double device = m.training.capacity / (1.0 - w.memory_headroom);
  out += "Memory per device (GiB)        training   rollout\n";
  auto cell = [&](const PhaseMemory& p, const std::string& row) {
    return has_item(p, row) ? gib(p.bytes(row)) : std::string("-");
  };
  for (const auto& row : memory_rows()) {
    if (!has_item(m.training, row) && !has_item(m.rollout, row)) continue;
    std::string line =
        "  " + pad(row, 28) + lpad(cell(m.training, row), 9) + lpad(cell(m.rollout, row), 10);
    if (row == "KV cache" && c.layout.backend != Backend::kEmbedded) {
      line += "   needs " + gib(m.engine.kv_needed) + " for " +
              std::to_string(m.engine.concurrent_seqs) + " sequences of " +
              std::to_string(w.seq_length()) + " tokens";
    }
    out += line + "\n";
  }
  out += "  " + pad("total", 28) + lpad(gib(m.training.total()), 9) +
         lpad(gib(m.rollout.total()), 10) + "   of " + gib(m.training.capacity) + " usable (" +
         gib(device) + " less " + format_fixed(100.0 * w.memory_headroom, 0) +
         "% kept for the estimate's error)" + (m.fits() ? "" : ", does not fit") + "\n";
  // The floor: what is resident whatever the data (docs/memory-model.md); the rows above are
  // the worst case, every sequence at its maximum length.
  // A floor inside the headroom may still fit (check's OOM_RISK warning); past the device it
  // cannot run.
  const double floor = std::max(m.training.floor_total(), m.rollout.floor_total());
  out += "  " + pad("floor (any data)", 28) + lpad(gib(m.training.floor_total()), 9) +
         lpad(gib(m.rollout.floor_total()), 10) +
         (m.floor_fits()    ? ""
          : floor <= device ? "   inside the headroom: may not fit"
                            : "   does not fit: cannot run") +
         "\n";
}

}  // namespace

std::string communication_pattern(const Plan& plan) {
  const ClusterProfile& c = plan.cluster;
  if (c.nodes == 1) return "intra-node (1 node)";
  return "hierarchical: TP" + std::string(plan.model.is_moe() ? "/EP" : "") +
         " inside nodes where possible, DP" +
         std::string(plan.best.layout.dims.pp > 1 ? "/PP" : "") + " across " +
         std::to_string(c.nodes) + " nodes";
}

namespace {

// The summary's first lines: the cluster, the model and the workload the plan is for.
std::string render_inputs(const Plan& plan) {
  const ModelSpec& m = plan.model;
  const ClusterProfile& c = plan.cluster;
  const WorkloadSpec& w = plan.workload;
  const ParamCounts counts = count_params(m);
  std::string out;
  out += "Cluster   " + c.name + ": " + std::to_string(c.nodes) +
         (c.nodes == 1 ? " node" : " nodes") + " x " + std::to_string(c.gpus_per_node) + " " +
         c.device.kind + " (" + format_fixed(c.device.memory_gib, 0) + " GiB, " +
         std::string(to_string(c.network.intra_node)) + " " +
         format_fixed(c.network.intra_node_gbps, 0) + " GB/s" +
         (c.nodes > 1 ? ", " + std::string(to_string(c.network.inter_node)) + " " +
                            format_fixed(c.network.inter_node_gbps, 0) + " GB/s per node"
                      : std::string{}) +
         ")\n";
  out += "Model     " + m.name + ": " + format_count(static_cast<double>(counts.total())) +
         " parameters";
  if (m.is_moe()) out += " (" + format_count(static_cast<double>(counts.active(m))) + " active)";
  // The checkpoint's multi-token-prediction layers: stored, but neither trained nor served here.
  if (counts.mtp > 0) out += " + " + format_count(static_cast<double>(counts.mtp)) + " MTP unused";
  out += ", " + std::to_string(m.num_layers) + " layers, " + std::to_string(m.num_attention_heads) +
         (m.is_mla() ? " heads (MLA, KV latent " + std::to_string(m.mla.kv_lora_rank) + " + " +
                           std::to_string(m.mla.qk_rope_head_dim) + ")"
                     : " heads / " + std::to_string(m.num_kv_heads) + " KV heads");
  if (m.is_moe()) {
    out += ", " + std::to_string(m.num_experts) + " experts (top " +
           std::to_string(m.experts_per_token) + ")";
  }
  if (m.vision.present())
    out += ", vision tower " + format_count(static_cast<double>(m.vision.params));
  out += "\n";
  out += "Workload  " + std::to_string(w.train_batch_size) + " prompts x " +
         std::to_string(w.rollout_n) + " responses, " + std::to_string(w.max_prompt_length) +
         " + " + std::to_string(w.max_response_length) + " tokens, mini batch " +
         std::to_string(w.ppo_mini_batch_size) + ", " + std::string(to_string(w.dtype)) +
         (w.use_kl_loss ? ", KL to reference" : "") + "\n\n";
  return out;
}

}  // namespace

std::string render_summary(const Plan& plan) {
  const ModelSpec& m = plan.model;
  const ClusterProfile& c = plan.cluster;
  const WorkloadSpec& w = plan.workload;
  std::string out;
  out += plan.feasible ? "Parallel Config Summary\n=======================\n"
                       : "Parallel Config Summary: no feasible "
                         "plan\n=========================================\n";
  out += render_inputs(plan);

  if (plan.feasible) {
    const Candidate& b = plan.best;
    const Layout& l = b.layout;
    const std::int64_t per_rank = w.ppo_mini_batch_size * w.rollout_n / l.dims.dp;
    out += pad(l.backend == Backend::kFsdp       ? "Actor (FSDP)"
               : l.backend == Backend::kEmbedded ? "Actor (grpo-trainer)"
                                                 : "Actor (Megatron-Core)",
               25) +
           dims_line(l, m) +
           (l.backend == Backend::kFsdp ? "  (every state sharded over all ranks)" : "") + "\n";
    if (l.dims.pp > 1) {
      const auto stages = stage_layers(m, l);
      out += pad("  pipeline stages", 25) + std::to_string(stages.size()) + " stages: first " +
             std::to_string(stages.front()) + ", last " + std::to_string(stages.back()) + " layers";
      if (stages.size() > 2) out += ", middle " + std::to_string(stages[1]);
      out += "\n";
    }
    out += pad("  micro batch", 25) + std::to_string(l.micro_batch) +
           (l.micro_batch == 1 ? " response" : " responses") + " per device (" +
           std::to_string(per_rank / l.micro_batch) +
           " micro batches per mini batch per DP rank)\n";
    out += pad("  sequence parallel", 25) + (l.sequence_parallel ? "on" : "off") + "\n";
    out += pad("  recompute", 25) + std::string(to_string(l.recompute)) + "\n";
    out += pad("  offload", 25) + to_string(l.offload) + "\n";
    if (l.backend != Backend::kFsdp) {
      out += pad("  distributed optimizer", 25) + (l.distributed_optimizer ? "on" : "off") + "\n";
    }
    out += pad("Reference", 25) +
           (w.use_kl_loss ? "same layout as the actor, forward only"
                          : "not used (use_kl_loss = false)") +
           "\n";
    if (l.backend == Backend::kEmbedded) {
      out += pad("Rollout (grpo-trainer)", 25) +
             (l.embedded_whole_model_rollout() ? "the whole model on every rank"
                                               : "at the actor's layout") +
             ", " + std::to_string(b.memory.embedded_rollout_seqs) +
             " sequences at a time per rank\n";
    } else {
      out += pad("Rollout (vLLM)", 25) + "TP=" + std::to_string(l.rollout_tp) + ", " +
             std::to_string(c.world_size() / l.rollout_tp) + " replicas, gpu_memory_utilization " +
             format_fixed(w.gpu_memory_utilization, 2) + ", " +
             std::to_string(b.memory.engine.concurrent_seqs) +
             " concurrent sequences per replica\n";
    }
    out += pad("Communication", 25) + communication_pattern(plan) + "\n\n";
    render_memory(out, b, w);
    const CostEstimate& e = b.cost;
    out += "\nEstimated step " + secs(e.step_s) + " s: rollout " + secs(e.rollout_s) +
           ", log-probs " + secs(e.logprob_s) + ", training " + secs(e.compute_s) + " + bubble " +
           secs(e.bubble_s) + ", comm TP " + secs(e.tp_comm_s) + " EP " + secs(e.ep_comm_s) +
           " DP " + secs(e.dp_comm_s) + " PP " + secs(e.pp_comm_s) + ", offload " +
           secs(e.offload_s) + "; MFU " + format_fixed(100.0 * e.mfu, 0) + "%\n";
    if (!plan.alternatives.empty()) {
      out += "\nAlternatives\n";
      int i = 2;
      for (const auto& a : plan.alternatives) {
        out += "  " + std::to_string(i++) + ". " + short_layout(a.layout, m) + ": step " +
               secs(a.cost.step_s) + " s, training " + gib(a.memory.training.total()) +
               " GiB, rollout " + gib(a.memory.rollout.total()) + " GiB\n";
      }
    }
  } else if (plan.best.memory.training.capacity > 0) {
    out += "Closest layout: " + short_layout(plan.best.layout, m) + "\n";
    render_memory(out, plan.best, w);
  }
  if (!plan.rejections.empty()) {
    out += "\nRejected\n";
    for (const auto& r : plan.rejections) {
      out += "  " + r.family + ": " + std::string(to_string(r.code)) + ", " + r.reason + "\n";
    }
  }
  if (!plan.diagnostics.empty()) {
    out += "\nFindings\n";
    for (const auto& d : plan.diagnostics) out += "  " + d.str() + "\n";
  }
  out += "\nSearched " + std::to_string(plan.stats.structural) + " parallel shapes (" +
         std::to_string(plan.stats.legal) + " legal), estimated " +
         std::to_string(plan.stats.evaluated) + " layouts, " + std::to_string(plan.stats.fitting) +
         " fit\n";
  return out;
}

nlohmann::json rank_map_to_json(const RankMap& map) {
  nlohmann::json j;
  j["schema"] = "grpo-launch/rankmap/v1";
  j["world_size"] = map.world_size();
  j["nodes"] = map.nodes;
  j["ranks_per_node"] = map.ranks_per_node;
  const auto& d = map.dims;
  j["parallel"] = {{"tp", d.tp}, {"pp", d.pp},   {"cp", d.cp},    {"dp", d.dp},
                   {"ep", d.ep}, {"etp", d.etp}, {"edp", d.edp()}};
  j["order"] = "tp-cp-dp-pp";
  j["expert_order"] = "etp-ep-edp-pp";
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : map.ranks) {
    ranks.push_back({{"global_rank", r.global_rank},
                     {"node_rank", r.node_rank},
                     {"local_rank", r.local_rank},
                     {"device", r.device},
                     {"tp", r.tp},
                     {"cp", r.cp},
                     {"dp", r.dp},
                     {"pp", r.pp},
                     {"ep", r.ep},
                     {"etp", r.etp},
                     {"edp", r.edp}});
  }
  j["ranks"] = std::move(ranks);
  return j;
}

nlohmann::json env_to_json(const EnvContract& env, const RankMap& map) {
  nlohmann::json j;
  j["schema"] = "grpo-launch/env/v1";
  j["job"] = env.job;
  nlohmann::json nodes = nlohmann::json::array();
  for (std::size_t i = 0; i < env.node.size(); ++i) {
    nodes.push_back({{"node_rank", i}, {"env", env.node[i]}});
  }
  j["nodes"] = std::move(nodes);
  j["per_rank_variables"] = per_rank_variables();
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : map.ranks) {
    EnvMap only;
    const EnvMap full = rank_env(env, map, r.global_rank);
    for (const auto& v : per_rank_variables()) only[v] = full.at(v);
    ranks.push_back({{"global_rank", r.global_rank}, {"env", only}});
  }
  j["ranks"] = std::move(ranks);
  return j;
}

nlohmann::json dims_to_json(const ParallelDims& d) {
  return {{"tp", d.tp}, {"pp", d.pp},   {"cp", d.cp},    {"dp", d.dp},
          {"ep", d.ep}, {"etp", d.etp}, {"edp", d.edp()}};
}

nlohmann::json layout_to_json(const Layout& l) {
  nlohmann::json j = dims_to_json(l.dims);
  j.update(nlohmann::json{{"backend", to_string(l.backend)},
                          {"micro_batch", l.micro_batch},
                          {"rollout_tp", l.rollout_tp},
                          {"sequence_parallel", l.sequence_parallel},
                          {"recompute", std::string(to_string(l.recompute))},
                          {"distributed_optimizer", l.distributed_optimizer},
                          {"offload",
                           {{"params", l.offload.params},
                            {"grads", l.offload.grads},
                            {"optimizer", l.offload.optimizer},
                            {"cpu_optimizer", l.offload.cpu_optimizer}}},
                          {"first_stage_layers", l.first_stage_layers},
                          {"last_stage_layers", l.last_stage_layers}});
  return j;
}

nlohmann::json diagnostic_to_json(const Diagnostic& d) {
  nlohmann::json j = {{"code", std::string(to_string(d.code))},
                      {"severity", std::string(to_string(d.severity))},
                      {"setting", d.setting},
                      {"message", d.message},
                      {"hint", d.hint}};
  if (d.where.known()) {
    j["file"] = d.where.file;
    j["line"] = d.where.line;
    if (d.where.column > 0) j["column"] = d.where.column;
  }
  return j;
}

namespace {

nlohmann::json phase_json(const PhaseMemory& p) {
  nlohmann::json items = nlohmann::json::object();
  nlohmann::json floors = nlohmann::json::object();
  for (const auto& i : p.items) {
    items[i.name] = i.bytes / kGiB;
    floors[i.name] = i.floor / kGiB;
  }
  return {{"items_gib", items},
          {"total_gib", p.total() / kGiB},
          {"floor_items_gib", floors},
          {"floor_gib", p.floor_total() / kGiB},
          {"capacity_gib", p.capacity / kGiB},
          {"fits", p.fits()},
          {"floor_fits", p.floor_fits()}};
}

nlohmann::json candidate_json(const Candidate& c) {
  const auto& e = c.cost;
  const auto& m = c.memory;
  return {{"layout", layout_to_json(c.layout)},
          {"memory",
           {{"training", phase_json(m.training)},
            {"rollout", phase_json(m.rollout)},
            {"rollout_budget_gib", m.engine.budget / kGiB},
            {"rollout_weights_fit", m.engine.weights_fit},
            {"kv_needed_gib", m.engine.kv_needed / kGiB},
            {"kv_capacity_gib", m.engine.kv_capacity / kGiB},
            {"concurrent_seqs", m.engine.concurrent_seqs},
            {"embedded_rollout_seqs", m.embedded_rollout_seqs},
            {"params_per_device", m.actor.total()},
            {"fits", m.fits()},
            {"floor_fits", m.floor_fits()}}},
          {"cost",
           {{"step_s", e.step_s},
            {"rollout_s", e.rollout_s},
            {"logprob_s", e.logprob_s},
            {"compute_s", e.compute_s},
            {"bubble_s", e.bubble_s},
            {"tp_comm_s", e.tp_comm_s},
            {"ep_comm_s", e.ep_comm_s},
            {"dp_comm_s", e.dp_comm_s},
            {"pp_comm_s", e.pp_comm_s},
            {"offload_s", e.offload_s},
            {"mfu", e.mfu},
            {"comm_bytes",
             {{"tp", e.bytes.tp}, {"ep", e.bytes.ep}, {"dp", e.bytes.dp}, {"pp", e.bytes.pp}}}}}};
}

}  // namespace

nlohmann::json plan_to_json(const Plan& plan) {
  const ParamCounts counts = count_params(plan.model);
  const auto& c = plan.cluster;
  const auto& w = plan.workload;
  nlohmann::json j;
  j["schema"] = "grpo-launch/plan/v1";
  j["version"] = GRPO_VERSION;
  j["feasible"] = plan.feasible;
  j["ok"] = plan_ok(plan);
  j["cluster"] = {{"name", c.name},
                  {"nodes", c.nodes},
                  {"gpus_per_node", c.gpus_per_node},
                  {"device", c.device.kind},
                  {"vendor", std::string(to_string(c.device.vendor))},
                  {"memory_gib", c.device.memory_gib}};
  j["model"] = {{"name", plan.model.name},
                {"params", counts.total()},
                {"active_params", counts.active(plan.model)},
                {"layers", plan.model.num_layers},
                {"experts", plan.model.num_experts}};
  j["workload"] = {{"train_batch_size", w.train_batch_size},
                   {"rollout_n", w.rollout_n},
                   {"ppo_mini_batch_size", w.ppo_mini_batch_size},
                   {"max_prompt_length", w.max_prompt_length},
                   {"max_response_length", w.max_response_length},
                   {"ppo_epochs", w.ppo_epochs},
                   {"gpu_memory_utilization", w.gpu_memory_utilization},
                   {"use_kl_loss", w.use_kl_loss},
                   {"dtype", std::string(to_string(w.dtype))}};
  if (plan.feasible) {
    j["plan"] = candidate_json(plan.best);
    j["communication"] = communication_pattern(plan);
    nlohmann::json alts = nlohmann::json::array();
    for (const auto& a : plan.alternatives) alts.push_back(candidate_json(a));
    j["alternatives"] = std::move(alts);
    j["rank_map"] = rank_map_to_json(plan.rank_map);
    j["env"] = env_to_json(plan.env, plan.rank_map);
  } else if (plan.best.memory.training.capacity > 0) {
    j["closest"] = candidate_json(plan.best);
  }
  nlohmann::json rej = nlohmann::json::array();
  for (const auto& r : plan.rejections) {
    rej.push_back(
        {{"family", r.family}, {"code", std::string(to_string(r.code))}, {"reason", r.reason}});
  }
  j["rejected"] = std::move(rej);
  nlohmann::json diags = nlohmann::json::array();
  for (const auto& d : plan.diagnostics) diags.push_back(diagnostic_to_json(d));
  j["diagnostics"] = std::move(diags);
  j["search"] = {{"structural", plan.stats.structural},
                 {"legal", plan.stats.legal},
                 {"evaluated", plan.stats.evaluated},
                 {"fitting", plan.stats.fitting}};
  return j;
}

}  // namespace grpo::core
