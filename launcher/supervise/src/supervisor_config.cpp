// supervisor.json (docs/supervisor.md, "supervisor.json"): the supervisor's settings as `submit`
// writes them into the run directory and `supervise` reads them back.
#include "grpo/supervise/supervisor.h"

#include <charconv>
#include <cmath>

namespace grpo::supervise {

using core::ErrorKind;
using core::make_error;
using nlohmann::json;

// --- supervisor.json ------------------------------------------------------------------------

namespace {

constexpr const char* kConfigSchema = "grpo-launch/supervisor/v1";

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

json supervisor_config_to_json(const SupervisorConfig& c) {
  json j;
  j["schema"] = kConfigSchema;
  j["trainer_contract"] = c.contract == TrainerContract::kEmbedded ? "embedded" : "external";
  j["max_restarts"] = c.budget.max_restarts;
  j["backoff_base_s"] = c.budget.backoff_base_s;
  j["backoff_max_s"] = c.budget.backoff_max_s;
  j["no_progress_restarts"] = c.budget.no_progress_restarts;
  j["hang_timeout_s"] = optional_number(c.hang.timeout_s);
  j["hang_min_s"] = c.hang.min_s;
  j["hang_step_factor"] = c.hang.step_factor;
  j["startup_timeout_s"] = c.hang.startup_s;
  j["checkpoint_progress_s"] = optional_number(c.hang.checkpoint_progress_s);
  json fixed = json::object();
  for (const auto& [cls, seconds] : c.hang.phases.fixed)
    fixed[std::string(to_string(cls))] = seconds;
  j["phase_timeouts"] = fixed;
  j["phase_timeout_factor"] = c.hang.phases.factor;
  j["phase_warmup_steps"] = c.hang.phases.warmup_steps;
  j["straggler_margin"] = c.straggler.rel_margin;
  j["straggler_min_s"] = c.straggler.abs_margin_s;
  j["straggler_steps"] = c.straggler.consecutive;
  j["warn_oom"] = c.warnings.oom;
  j["warn_expert_imbalance"] = c.warnings.expert_imbalance;
  j["warn_straggler"] = c.warnings.straggler;
  j["total_steps"] = c.total_steps;
  j["micro_batch"] = c.micro_batch ? json(*c.micro_batch) : json(nullptr);
  j["offload_supported"] = c.offload_supported;
  j["min_nodes"] = c.min_nodes;
  j["divisible_by"] = c.divisible_by;
  j["world_unit"] = c.world_unit;
  json replans = json::object();
  for (const auto& [n, sets] : c.replans) replans[std::to_string(n)] = sets;
  j["replans"] = replans;
  j["stop_grace_s"] = c.stop_grace_s;
  j["checkpoint_timeout_s"] = c.checkpoint_timeout_s;
  j["end_margin_s"] = c.end_margin_s;
  j["saves_before_end"] = c.saves_before_end;
  j["reports_steps"] = c.reports_steps;
  j["health_check"] = c.health_check;
  j["health_gpus"] = c.health_gpus;
  j["mtbf_prior_s"] = c.mtbf_prior_s;
  j["step_event_ranks"] = c.step_event_ranks;
  j["export_hf"] = c.export_hf;
  j["stack_timeout_s"] = c.stack_timeout_s;
  return j;
}

core::Result<SupervisorConfig> supervisor_config_from_json(const json& j, const std::string& file) {
  const core::SourceLocation where{file};
  if (!j.is_object()) return make_error(ErrorKind::kWrongType, "not a JSON object", where);
  if (j.value("schema", std::string()) != kConfigSchema) {
    return make_error(ErrorKind::kInvalidValue,
                      std::string("schema is not \"") + kConfigSchema + "\"", where);
  }
  SupervisorConfig c;
  try {
    const std::string contract = j.value("trainer_contract", std::string("embedded"));
    if (contract != "embedded" && contract != "external") {
      return make_error(ErrorKind::kInvalidValue, "trainer_contract must be embedded or external",
                        where);
    }
    c.contract = contract == "embedded" ? TrainerContract::kEmbedded : TrainerContract::kExternal;
    c.budget.max_restarts = j.value("max_restarts", c.budget.max_restarts);
    c.budget.backoff_base_s = j.value("backoff_base_s", c.budget.backoff_base_s);
    c.budget.backoff_max_s = j.value("backoff_max_s", c.budget.backoff_max_s);
    c.budget.no_progress_restarts = j.value("no_progress_restarts", c.budget.no_progress_restarts);
    if (j.contains("hang_timeout_s") && !j["hang_timeout_s"].is_null())
      c.hang.timeout_s = j["hang_timeout_s"].get<double>();
    c.hang.min_s = j.value("hang_min_s", c.hang.min_s);
    c.hang.step_factor = j.value("hang_step_factor", c.hang.step_factor);
    c.hang.startup_s = j.value("startup_timeout_s", c.hang.startup_s);
    if (j.contains("checkpoint_progress_s") && !j["checkpoint_progress_s"].is_null())
      c.hang.checkpoint_progress_s = j["checkpoint_progress_s"].get<double>();
    if (j.contains("phase_timeouts")) {
      for (const auto& [name, seconds] : j.at("phase_timeouts").items()) {
        const auto cls = parse_phase_class(name);
        const double v = seconds.get<double>();
        if (!cls || !(v > 0)) {
          return make_error(ErrorKind::kInvalidValue,
                            "phase_timeouts: '" + name + "' is not a phase with seconds above 0",
                            where);
        }
        c.hang.phases.fixed[*cls] = v;
      }
    }
    c.hang.phases.factor = j.value("phase_timeout_factor", c.hang.phases.factor);
    c.hang.phases.warmup_steps = j.value("phase_warmup_steps", c.hang.phases.warmup_steps);
    c.straggler.rel_margin = j.value("straggler_margin", c.straggler.rel_margin);
    c.straggler.abs_margin_s = j.value("straggler_min_s", c.straggler.abs_margin_s);
    c.straggler.consecutive = j.value("straggler_steps", c.straggler.consecutive);
    c.warnings.oom = j.value("warn_oom", c.warnings.oom);
    c.warnings.expert_imbalance = j.value("warn_expert_imbalance", c.warnings.expert_imbalance);
    c.warnings.straggler = j.value("warn_straggler", c.warnings.straggler);
    c.total_steps = j.value("total_steps", c.total_steps);
    if (j.contains("micro_batch") && !j["micro_batch"].is_null())
      c.micro_batch = j["micro_batch"].get<int>();
    c.offload_supported = j.value("offload_supported", c.offload_supported);
    c.min_nodes = j.value("min_nodes", c.min_nodes);
    c.divisible_by = j.value("divisible_by", c.divisible_by);
    c.world_unit = j.value("world_unit", c.world_unit);
    if (j.contains("replans")) {
      for (const auto& [n, sets] : j.at("replans").items()) {
        int nodes = 0;
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), nodes);
        if (ec != std::errc() || end != n.data() + n.size() || nodes < 1) {
          return make_error(ErrorKind::kInvalidValue,
                            "replans: '" + n + "' is not a number of nodes", where);
        }
        c.replans[nodes] = sets.get<std::vector<std::string>>();
      }
    }
    c.stop_grace_s = j.value("stop_grace_s", c.stop_grace_s);
    c.checkpoint_timeout_s = j.value("checkpoint_timeout_s", c.checkpoint_timeout_s);
    c.end_margin_s = j.value("end_margin_s", c.end_margin_s);
    c.saves_before_end = j.value("saves_before_end", c.saves_before_end);
    c.reports_steps = j.value("reports_steps", c.reports_steps);
    c.health_check = j.value("health_check", c.health_check);
    c.health_gpus = j.value("health_gpus", c.health_gpus);
    c.mtbf_prior_s = j.value("mtbf_prior_s", c.mtbf_prior_s);
    c.step_event_ranks = j.value("step_event_ranks", c.step_event_ranks);
    c.export_hf = j.value("export_hf", c.export_hf);
    c.stack_timeout_s = j.value("stack_timeout_s", c.stack_timeout_s);
  } catch (const json::exception& e) {
    return make_error(ErrorKind::kWrongType, std::string("a field has the wrong type: ") + e.what(),
                      where);
  }
  if (c.budget.max_restarts < 0 || c.budget.no_progress_restarts < 1 ||
      c.budget.backoff_base_s < 0 || c.budget.backoff_max_s < 0 ||
      (c.hang.timeout_s && *c.hang.timeout_s <= 0) || c.stop_grace_s < 0 ||
      (c.micro_batch && *c.micro_batch < 1) || c.min_nodes < 0 || c.world_unit < 1 ||
      c.straggler.consecutive < 1 || !(c.hang.phases.factor >= 1) ||
      c.hang.phases.warmup_steps < 0 || c.step_event_ranks < 1 || !(c.stack_timeout_s >= 0)) {
    return make_error(ErrorKind::kInvalidValue, "a setting is out of range", where);
  }
  return c;
}

}  // namespace grpo::supervise
