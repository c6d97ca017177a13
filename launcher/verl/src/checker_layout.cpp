// The checker's layout phase: the Megatron / FSDP layout the overrides describe and the engines'
// rules on it (parallel sizes, group split, token caps, data types, model family).
#include <algorithm>
#include <string>

#include "checker_run.h"
#include "grpo/core/family_rules.h"
#include "grpo/core/text.h"
#include "grpo/core/verl_keys.h"
#include "grpo/plan/planner.h"

namespace grpo::core::checker_detail {

void RunChecker::check_family() {
  if (!megatron_) return;
  const bool mbridge = bool_setting(A + "actor.megatron.use_mbridge", true);
  const bool vanilla = bool_setting(A + "actor.megatron.vanilla_mbridge", true);
  const Override* o = usable(kStrategy);
  const SourceLocation where = o != nullptr ? o->where : command_location();
  const FamilySupport f = verl_megatron_supports(model_, mbridge, vanilla);
  if (!f.ok) {
    add(DiagCode::kInvalidSetting, "strategy", f.why, f.fix, where);
    return;
  }
  const std::string window =
      mbridge_window_ignored(model_, mbridge, vanilla, workload_.seq_length());
  if (!window.empty()) {
    add(DiagCode::kInvalidSetting, "strategy", window,
        "keep data.max_prompt_length + data.max_response_length within the window, or use "
        "verl's FSDP strategy (transformers' attention honours it)",
        where, Severity::kWarning);
  }
}

void RunChecker::build_layout() {
  const std::string strategy = string_setting(kStrategy, "");
  megatron_ = strategy == "megatron" ||
              (strategy.empty() && config_name_.find("megatron") != std::string::npos);
  run_.strategy = megatron_ ? "megatron" : "fsdp";
  WorkloadSpec& w = workload_;
  w.train_batch_size = int_setting(kTrainBatch, 1024);
  w.rollout_n = int_setting(std::string(verl_key::kRolloutN), 1);
  w.ppo_mini_batch_size = int_setting(kMini, 256);
  w.max_prompt_length = int_setting(verl_key::kMaxPromptLength, 512);
  w.max_response_length = int_setting(verl_key::kMaxResponseLength, 512);
  w.ppo_epochs = int_setting(std::string(verl_key::kPpoEpochs), 1);
  w.gpu_memory_utilization = double_setting(A + "rollout.gpu_memory_utilization", 0.5);
  w.rollout_sglang = string_setting(A + "rollout.name", "vllm") == "sglang";
  w.max_num_seqs = int_setting(std::string(verl_key::kRolloutMaxNumSeqs), 1024);
  w.use_kl_loss = bool_setting(std::string(verl_key::kUseKlLoss), false);
  w.memory_headroom = cluster_.grpo.memory_headroom;
  w.achievable_mfu = cluster_.grpo.achievable_mfu;
  const bool fp16 = bool_setting(kTc + "fp16", false);
  w.dtype = fp16 ? Dtype::kFp16 : Dtype::kBf16;
  read_memory_settings(w);
  cluster_.grpo = w;
  run_.workload = w;

  Layout& l = run_.layout;
  const int world = cluster_.world_size();
  if (megatron_) {
    l.dims.tp = static_cast<int>(int_setting(kTp, 1));
    l.dims.pp = static_cast<int>(int_setting(kPp, 1));
    l.dims.cp = static_cast<int>(int_setting(kCp, 1));
    l.dims.ep = static_cast<int>(int_setting(kEp, 1));
    // Megatron-Core: expert_tensor_parallel_size None means "the same as TP" (MoE models).
    l.dims.etp = static_cast<int>(int_setting(kEtp, model_.is_moe() ? l.dims.tp : 1));
    l.sequence_parallel = l.dims.tp > 1 && bool_setting(kSp, true);
    l.distributed_optimizer = bool_setting(kDistOpt, true);
    l.offload.params = bool_setting(A + "actor.megatron.param_offload", false);
    l.offload.grads = bool_setting(A + "actor.megatron.grad_offload", false);
    l.offload.optimizer = bool_setting(A + "actor.megatron.optimizer_offload", false);
    l.first_stage_layers =
        static_cast<int>(int_setting(kTc + "num_layers_in_first_pipeline_stage", 0, 0));
    l.last_stage_layers =
        static_cast<int>(int_setting(kTc + "num_layers_in_last_pipeline_stage", 0, 0));
    l.split_counts_embedding = bool_setting(kTc + "account_for_embedding_in_pipeline_split", false);
    l.split_counts_loss = bool_setting(kTc + "account_for_loss_in_pipeline_split", false);
    l.recompute = string_setting(kTc + "recompute_granularity", "") == "full" ? Recompute::kFull
                                                                              : Recompute::kNone;
    l.recompute_method = string_setting(kTc + "recompute_method", "uniform") == "block"
                             ? RecomputeMethod::kBlock
                             : RecomputeMethod::kUniform;
    l.recompute_layers = static_cast<int>(int_setting(kTc + "recompute_num_layers", 1));
    // Megatron-Core's CPU optimizer, passed through verl's override_optimizer_config.
    l.offload.cpu_optimizer = bool_setting(kOptim + "optimizer_cpu_offload", false);
    l.offload.cpu_optimizer_fraction = double_setting(kOptim + "optimizer_offload_fraction", 1.0);
    if (find(kRefTp) != nullptr) l.ref_tp = static_cast<int>(int_setting(kRefTp, l.dims.tp));
    if (find(kRefPp) != nullptr) l.ref_pp = static_cast<int>(int_setting(kRefPp, l.dims.pp));
    l.vpp = static_cast<int>(int_setting(kVpp, 0));
    l.pipeline_layout = string_setting(kPipelineLayout, "");
    if (ascii_lower(l.pipeline_layout) == "null") l.pipeline_layout.clear();
  } else {
    l.backend = Backend::kFsdp;
    l.offload.params = bool_setting(A + "actor.fsdp_config.param_offload", false);
    l.offload.optimizer = bool_setting(A + "actor.fsdp_config.optimizer_offload", false);
    l.recompute = bool_setting(A + "model.enable_gradient_checkpointing", true) ? Recompute::kFull
                                                                                : Recompute::kNone;
    // verl's FSDP worker: data-parallel size = world / Ulysses size (a (dp, sp) device mesh).
    // The layout carries the Ulysses size as its CP; FSDP still shards over every rank.
    l.dims.cp = static_cast<int>(int_setting(kUlysses, 1));
  }
  const int mp = l.dims.tp * l.dims.pp * l.dims.cp;
  l.dims.dp = mp > 0 && world % mp == 0 ? world / mp : 1;
  l.rollout_tp = static_cast<int>(int_setting(kRolloutTp, 2));
  l.rollout_dp = static_cast<int>(int_setting(kRolloutDp, 1));
  l.rollout_pp = static_cast<int>(int_setting(kRolloutPp, 1));
  l.rollout_ep = static_cast<int>(int_setting(kRolloutEp, 1));
  l.vision_data_parallel = ascii_lower(string_setting(kMmEncoderTpMode, "weights")) == "data";
  if (find(kMicro) != nullptr) {
    l.micro_batch = static_cast<int>(int_setting(kMicro, 1));
    micro_given_ = true;
  } else if (bool_setting(A + "actor.use_dynamic_bsz", false)) {
    const std::int64_t max_tokens = int_setting(A + "actor.ppo_max_token_len_per_gpu", 16384);
    l.micro_batch = static_cast<int>(
        std::max<std::int64_t>(1, max_tokens / std::max<std::int64_t>(1, w.seq_length())));
  }
}

std::string RunChecker::key_for(const std::string& setting) const {
  if (setting == "cp" && !megatron_) return kUlysses;
  static const std::map<std::string, std::string> keys = {
      {"tp", kTp},
      {"pp", kPp},
      {"cp", kCp},
      {"ep", kEp},
      {"etp", kEtp},
      {"dp", verl_key::kGpusPerNode},
      {"rollout_tp", kRolloutTp},
      {"ref_tp", kRefTp},
      {"ref_pp", kRefPp},
      {"vpp", kVpp},
      {"pipeline_layout", kPipelineLayout},
      {"remove_padding", kRemovePadding},
      {"micro_batch", kMicro},
      {"ppo_mini_batch_size", kMini},
      {"train_batch_size", kTrainBatch},
      {"sequence_parallel", kSp},
      {"first_stage_layers", kTc + "num_layers_in_first_pipeline_stage"},
      {"grpo.dtype", kTc + "bf16"},
  };
  const auto it = keys.find(setting);
  return it == keys.end() ? setting : it->second;
}

void RunChecker::check_parallel() {
  const Layout& l = run_.layout;
  for (Diagnostic d : check_legality(model_, cluster_, workload_, l, options_.engines)) {
    if (check_group(d.code) != "parallel") continue;
    if (d.setting == "micro_batch" && !micro_given_) continue;  // verl's default is dynamic
    std::string key = key_for(d.setting);
    if (d.code == DiagCode::kWorldSizeMismatch && d.setting == "tp" && !megatron_) {
      // FSDP: only the Ulysses size can fail to divide the world.
      key = kUlysses;
      d.message = "world size " + std::to_string(cluster_.world_size()) +
                  " is not divisible by the Ulysses size " + std::to_string(l.dims.cp) +
                  " (verl's FSDP worker builds a (dp, sp) device mesh over every rank)";
      d.hint =
          "use an ulysses_sequence_parallel_size dividing " + std::to_string(cluster_.world_size());
    } else if (d.code == DiagCode::kWorldSizeMismatch && d.setting == "tp") {
      // TP x PP x CP does not divide the world: blame the size the script set that does not
      // divide it (else any size the script set).
      const int world = cluster_.world_size();
      std::string any_set;
      for (const auto& [k, v] : {std::pair{kTp, l.dims.tp}, {kPp, l.dims.pp}, {kCp, l.dims.cp}}) {
        if (find(k) == nullptr) continue;
        if (any_set.empty()) any_set = k;
        if (v > 0 && world % v != 0) {
          any_set = k;
          break;
        }
      }
      if (!any_set.empty()) key = any_set;
    }
    if (d.setting == "rollout_tp" &&
        (d.code == DiagCode::kWorldSizeMismatch || d.code == DiagCode::kTpCrossesNode) &&
        (l.rollout_dp > 1 || l.rollout_pp > 1)) {
      // A replica is TP x DP x PP: blame the rollout DP (or PP) the script set when the rollout
      // TP alone would be fine.
      const int world = cluster_.world_size();
      const int gpn = cluster_.gpus_per_node;
      const int rtp = l.rollout_tp;
      const bool tp_alone_ok =
          rtp > 0 && world % rtp == 0 && (rtp <= gpn ? gpn % rtp == 0 : rtp % gpn == 0);
      const std::string& other = l.rollout_dp > 1 ? kRolloutDp : kRolloutPp;
      if (tp_alone_ok && find(other) != nullptr) key = other;
    }
    const Override* o = find(key);
    d.setting = key;
    d.where = o != nullptr ? o->where : command_location();
    if (o == nullptr) d.message += " (verl's default for " + key + ")";
    add(d.code, d.setting, d.message, d.hint, d.where, d.severity);
  }
  check_group_split();
  if (!megatron_) {
    const auto sp = int_setting(A + "actor.ulysses_sequence_parallel_size", 1);
    if (sp > 1 && model_.num_attention_heads % sp != 0) {
      add(DiagCode::kHeadsNotDivisible, A + "actor.ulysses_sequence_parallel_size",
          std::to_string(model_.num_attention_heads) +
              " attention heads are not divisible by the Ulysses size " + std::to_string(sp),
          "use a size dividing the head count",
          where_or_command(A + "actor.ulysses_sequence_parallel_size"));
    }
  }
}

void RunChecker::check_group_split() {
  const Layout& l = run_.layout;
  if (options_.engines.verl < EngineVersion{0, 8, 0}) return;
  if (!bool_setting(kPrefixGrouper, false) || !bool_setting(kBalanceBatch, true)) return;
  const std::int64_t prompts = workload_.train_batch_size;
  if (l.dims.dp < 1 || prompts % l.dims.dp == 0) return;
  add(DiagCode::kGroupSplit, kTrainBatch,
      std::to_string(prompts) + " prompts do not divide over DP = " + std::to_string(l.dims.dp) +
          " ranks: with use_prefix_grouper and balance_batch verl keeps each prompt's "
          "responses on one rank and raises ValueError",
      "make data.train_batch_size a multiple of " + std::to_string(l.dims.dp) +
          ", or turn use_prefix_grouper off",
      where_or_command(kTrainBatch));
}

void RunChecker::check_data_types() {
  const Override* fp16 = usable(kTc + "fp16");
  const Override* bf16 = usable(kTc + "bf16");
  const bool is_fp16 = fp16 != nullptr && parse_bool_word(fp16->value).value_or(false);
  const bool is_bf16 = bf16 != nullptr && parse_bool_word(bf16->value).value_or(false);
  if (is_fp16 && is_bf16) {
    const Override* later = fp16->where.line > bf16->where.line ? fp16 : bf16;
    add(DiagCode::kDtypeConflict, later->key,
        "fp16 and bf16 are both enabled in override_transformer_config",
        "enable exactly one of them", later->where);
  }
  if (const Override* pd = usable(kTc + "params_dtype")) {
    std::string v = ascii_lower(pd->value);
    v.erase(std::remove(v.begin(), v.end(), '\''), v.end());
    v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
    if (v.rfind("torch.", 0) == 0) v = v.substr(6);
    const bool v16 = v == "fp16" || v == "float16" || v == "half";
    const bool vbf = v == "bf16" || v == "bfloat16";
    if ((is_fp16 && !v16) || (is_bf16 && !vbf)) {
      add(DiagCode::kDtypeConflict, pd->key,
          "params_dtype=" + pd->value + " contradicts " + (is_fp16 ? "fp16" : "bf16") +
              "=True: Megatron keeps its parameters in the training dtype and fp32 master copies "
              "apart",
          std::string("remove params_dtype or set it to ") + (is_fp16 ? "fp16" : "bf16"),
          pd->where);
    }
  }
  const Override* scaling = usable(kTc + "apply_query_key_layer_scaling");
  const Override* softmax = usable(kTc + "attention_softmax_in_fp32");
  const bool softmax_fp32 = softmax == nullptr || parse_bool_word(softmax->value).value_or(true);
  if (scaling != nullptr && parse_bool_word(scaling->value).value_or(false) && !softmax_fp32) {
    add(DiagCode::kDtypeConflict, softmax->key,
        "apply_query_key_layer_scaling=True requires attention_softmax_in_fp32=True "
        "(Megatron-Core asserts it)",
        "set attention_softmax_in_fp32=True", softmax->where);
  } else if (is_fp16 && softmax != nullptr && !softmax_fp32) {
    add(DiagCode::kDtypeConflict, softmax->key,
        "fp16 training with the attention softmax in fp16 overflows on long sequences",
        "set attention_softmax_in_fp32=True", softmax->where, Severity::kWarning);
  }
  if (!is_fp16 && !cluster_.device.bf16) {
    const Override* where = bf16 != nullptr ? bf16 : find(kModelPath);
    add(DiagCode::kDtypeConflict, where != nullptr ? where->key : kModelPath,
        "bf16 training (verl's default) on " + cluster_.device.kind + ", which has no bf16",
        "train in fp16 (override_transformer_config.fp16=True with loss scaling) or use newer "
        "hardware",
        where != nullptr ? where->where : command_location());
  }
  if (const Override* rd = usable(A + "rollout.dtype")) {
    const std::string v = ascii_lower(string_setting(A + "rollout.dtype", ""));
    const bool r16 = v == "float16" || v == "fp16" || v == "half";
    const bool rbf = v == "bfloat16" || v == "bf16";
    if (const std::string refused = r16 ? vllm_float16_refusal(model_) : ""; !refused.empty()) {
      add(DiagCode::kDtypeConflict, rd->key, refused, "use bfloat16 for the rollout", rd->where);
    } else if ((r16 && !is_fp16) || (rbf && is_fp16)) {
      add(DiagCode::kDtypeConflict, rd->key,
          "rollout dtype " + rd->value + " differs from the actor's " +
              (is_fp16 ? "fp16" : "bf16") + ": log-probs of the rollout and the actor disagree",
          "use the same dtype for rollout and actor", rd->where, Severity::kWarning);
    }
  }
}

void RunChecker::check_token_caps() {
  if (!workload_.dynamic_batch()) return;
  const std::int64_t split = std::max(1, run_.layout.dims.cp);
  const std::int64_t seq = workload_.seq_length();
  const std::vector<std::pair<std::string, std::int64_t>> caps = {
      {A + "actor.ppo_max_token_len_per_gpu", workload_.max_token_len_per_gpu},
      {A + "rollout.log_prob_max_token_len_per_gpu", workload_.logprob_max_token_len_per_gpu}};
  for (const auto& [key, cap] : caps) {
    if (cap <= 0 || cap * split >= seq) continue;
    add(DiagCode::kInvalidSetting, key,
        key + "=" + std::to_string(cap) + (split > 1 ? " x " + std::to_string(split) : "") +
            " tokens cannot hold one sequence of max_prompt_length + max_response_length = " +
            std::to_string(seq) +
            ": verl's dynamic batch size fails at the first step (\"max_token_len must be "
            "greater than the sequence length\")",
        "raise it to at least " + std::to_string((seq + split - 1) / split), where_or_command(key));
  }
}

}  // namespace grpo::core::checker_detail
