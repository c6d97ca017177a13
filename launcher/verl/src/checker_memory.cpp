// The checker's memory phase: the memory settings of the run and the estimate against the device.
#include <algorithm>
#include <string>

#include "checker_run.h"
#include "grpo/core/family_rules.h"
#include "grpo/core/text.h"
#include "grpo/core/verl_keys.h"
#include "grpo/plan/planner.h"

namespace grpo::core::checker_detail {

void RunChecker::read_memory_settings(WorkloadSpec& w) {
  // verl's Megatron engine packs by actor.megatron.use_remove_padding, FSDP by the model's.
  w.remove_padding = megatron_ ? bool_setting(kRemovePadding, true)
                               : bool_setting(A + "model.use_remove_padding", true);
  if (bool_setting(A + "actor.use_dynamic_bsz", false)) {
    w.max_token_len_per_gpu = int_setting(A + "actor.ppo_max_token_len_per_gpu", 16384);
    w.logprob_max_token_len_per_gpu =
        int_setting(A + "rollout.log_prob_max_token_len_per_gpu", w.max_token_len_per_gpu);
  }
  w.fused_logprob = bool_setting(A + "actor.use_fused_kernels",
                                 bool_setting(A + "model.use_fused_kernels", false));
  w.entropy_chunking = bool_setting(A + "actor.entropy_from_logits_with_chunking", false);
  w.prefix_grouper = bool_setting(kPrefixGrouper, false);
  w.free_cache_engine = bool_setting(A + "rollout.free_cache_engine", true);
  w.engine_worker =
      ascii_lower(string_setting("trainer.use_legacy_worker_impl", "auto")) == "disable";
  w.lora.rank = static_cast<int>(int_setting(A + "model.lora_rank", 0, 0));
  w.lora.alpha = double_setting(A + "model.lora_alpha", 16);
  if (usable(A + "model.target_modules") != nullptr) {
    w.lora.targets.clear();
    std::string list = string_setting(A + "model.target_modules", "all-linear");
    for (char& ch : list) {
      if (ch == '[' || ch == ']' || ch == '\'' || ch == '"') ch = ' ';
    }
    for (const std::string_view item : split(list, ',')) {
      if (!trim(item).empty()) w.lora.targets.emplace_back(trim(item));
    }
    if (w.lora.targets.empty()) w.lora.targets = {"all-linear"};
  }
}

void RunChecker::check_memory() {
  const Layout& l = run_.layout;
  if (l.backend != Backend::kFsdp) {
    // The estimate needs a legal shape (under the engine versions checked); parallel errors
    // are reported already.
    for (const auto& d : check_legality(model_, cluster_, workload_, l, options_.engines)) {
      const bool structural =
          d.code == DiagCode::kWorldSizeMismatch || d.code == DiagCode::kHeadsNotDivisible ||
          d.code == DiagCode::kKvHeadsNotDivisible || d.code == DiagCode::kLayersNotDivisible ||
          d.code == DiagCode::kExpertsNotDivisible || d.code == DiagCode::kTpCrossesNode;
      if (structural && d.severity == Severity::kError) return;
    }
  }
  run_.memory = estimate_memory(model_, cluster_, workload_, l);
  const MemoryEstimate& m = *run_.memory;
  if (m.fits()) return;
  std::string where_key = kModelPath;
  const std::string utilization = A + "rollout.gpu_memory_utilization";
  if (m.limiting().phase == "rollout" && find(utilization) != nullptr) {
    where_key = utilization;  // the rollout's own budget, not the training micro batch
  } else if (find(kMicro) != nullptr) {
    where_key = kMicro;
  } else if (workload_.dynamic_batch() && find(A + "actor.ppo_max_token_len_per_gpu")) {
    where_key = A + "actor.ppo_max_token_len_per_gpu";
  } else if (megatron_ && find(kTp) != nullptr) {
    where_key = kTp;
  }
  Candidate c;
  c.layout = l;
  c.memory = m;
  if (!m.engine.weights_fit && workload_.rollout_sglang) {
    add(DiagCode::kOomRisk, where_key,
        "SGLang's mem_fraction_static (gpu_memory_utilization) x " +
            format_fixed(cluster_.device.memory_gib, 0) + " GiB = " + format_gib(m.engine.budget) +
            " holds what stays resident for the rollout and " + format_gib(m.engine.weights) +
            " of rollout weights at rollout TP=" + std::to_string(l.rollout_tp) +
            ", and leaves no KV cache for one sequence (sglang model_runner "
            "profile_max_num_token: \"Not enough memory\")",
        "raise gpu_memory_utilization or rollout.tensor_model_parallel_size, or offload the "
        "actor's parameters and optimizer",
        where_or_command(where_key));
    return;
  }
  if (!m.engine.weights_fit) {
    add(DiagCode::kOomRisk, where_key,
        "rollout weights " + format_gib(m.engine.weights) + " per device at rollout TP=" +
            std::to_string(l.rollout_tp) + " do not fit gpu_memory_utilization x " +
            format_fixed(cluster_.device.memory_gib, 0) + " GiB = " + format_gib(m.engine.budget),
        "raise rollout.tensor_model_parallel_size or gpu_memory_utilization",
        where_or_command(where_key));
    return;
  }
  const PhaseMemory& p = m.limiting();
  std::string breakdown;
  for (const auto& item : p.items) {
    if (item.bytes > 0)
      breakdown += (breakdown.empty() ? "" : ", ") + item.name + " " + format_gib(item.bytes);
  }
  const std::string needs = p.phase + " phase needs " + format_gib(p.floor_total()) +
                            " (floor) to " + format_gib(p.total()) +
                            " (worst case) per device of " + format_gib(p.capacity) +
                            " usable on " + cluster_.device.kind + " [" + breakdown + "]";
  if (!m.floor_fits()) {
    // It cannot run whatever the data: an error, unless the floor still fits the whole device:
    // the headroom (grpo.memory_headroom, 5 %) is the margin kept for the estimate's own error
    // (docs/memory-model.md "Simplifications and known gaps"), so a floor inside it is a
    // warning.
    const double device = cluster_.device.memory_gib * kGiB;
    // Sharded state shrinks with the world size: when the script's node or device count is
    // not known statically (a Slurm variable the submission sets), the verdict rests on the
    // assumed count and stays a warning.
    std::string assumed;
    for (const char* key : {verl_key::kNnodes, verl_key::kGpusPerNode}) {
      const Override* o = find(key);
      if (o != nullptr && o->unresolved)
        assumed += (assumed.empty() ? "" : " and ") + std::string(key);
    }
    std::string soft;  // why a floor that does not fit is only a warning
    if (p.floor_total() <= device) {
      soft = "the floor is inside the " + format_fixed(100.0 * workload_.memory_headroom, 0) +
             " % headroom kept for the estimate's error (" + format_gib(device) +
             " on the device): it may not fit";
    } else if (!assumed.empty()) {
      soft = "the floor does not fit at the assumed " + std::to_string(cluster_.nodes) + " x " +
             std::to_string(cluster_.gpus_per_node) + " devices (" + assumed +
             " not known statically): it may fit on more";
    }
    if (!soft.empty()) {
      add(DiagCode::kOomRisk, where_key, needs + "; " + soft, cheapest_fix(c, cluster_),
          where_or_command(where_key), Severity::kWarning);
      return;
    }
    add(DiagCode::kOomRisk, where_key, needs + "; even the floor does not fit",
        cheapest_fix(c, cluster_), where_or_command(where_key));
    return;
  }
  // Only the worst case does not fit: a warning that says where it stops fitting.
  std::string when = "when every sequence reaches its maximum length";
  if (p.phase == "training" && !workload_.dynamic_batch()) {
    const auto longest = longest_fitting_response(model_, cluster_, workload_, l);
    when = longest ? "when responses grow past " + std::to_string(*longest) +
                         " tokens (max_response_length " +
                         std::to_string(workload_.max_response_length) + ")"
                   : "even with 1-token responses: " + std::to_string(l.micro_batch) +
                         " prompts of " + std::to_string(workload_.max_prompt_length) +
                         " tokens in one micro batch do not fit";
  } else if (p.phase == "training") {
    when = "when a micro batch is packed to its " +
           std::to_string(workload_.max_token_len_per_gpu) + "-token cap";
  }
  add(DiagCode::kOomRisk, where_key, needs + "; it runs out of memory " + when,
      cheapest_fix(c, cluster_), where_or_command(where_key), Severity::kWarning);
}

}  // namespace grpo::core::checker_detail
