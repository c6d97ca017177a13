#include "grpo/verl/verl_script.h"

#include <array>
#include <charconv>

#include "grpo/core/text.h"
#include "grpo/core/verl_keys.h"
#include "grpo/job/trainer_args.h"
#include "grpo/plan/plan_render.h"
#include "grpo/shell/shell_quote.h"

namespace grpo::core {

namespace {
constexpr int kEmittedSaveFreq = 20;
}  // namespace
namespace {

const std::string A = "actor_rollout_ref.";

std::string boolean(bool v) {
  return v ? "true" : "false";
}

// The layout keys of trainer_layout_settings (the one map of a layout onto verl's Megatron and
// rollout keys) under `prefix`, as overrides.
void layout_settings(const Layout& l, const std::string& prefix, std::vector<VerlOverride>& out) {
  for (const std::string& kv : trainer_layout_settings(l)) {
    const auto eq = kv.find('=');
    // The stage split goes into override_transformer_config by `++` (below).
    if (kv.find(".override_transformer_config.") != std::string::npos) continue;
    if (kv.rfind(prefix, 0) == 0 && eq != std::string::npos)
      out.push_back({"", kv.substr(0, eq), kv.substr(eq + 1)});
  }
}

// The shortest decimal that reads back as `v` (0.6, not 0.600000).
std::string number(double v) {
  std::array<char, 64> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return format_fixed(v, 6);
  return std::string(buf.data(), end);
}

class Overrides {
 public:
  void plain(std::string key, std::string value) {
    out_.push_back({"", std::move(key), std::move(value)});
  }
  void plain(std::string key, std::int64_t value) { plain(std::move(key), std::to_string(value)); }
  // A key inside one of verl's free-form override_* / engine_kwargs mappings: `++` adds it or
  // replaces it, whichever the pinned verl's YAML needs.
  void added(std::string key, std::string value) {
    out_.push_back({"++", std::move(key), std::move(value)});
  }
  void layout(const Layout& l, const std::string& prefix) { layout_settings(l, prefix, out_); }
  std::vector<VerlOverride> take() { return std::move(out_); }

 private:
  std::vector<VerlOverride> out_;
};

void megatron_actor(const Plan& plan, Overrides& o) {
  const Layout& l = plan.best.layout;
  const WorkloadSpec& w = plan.workload;
  const std::string m = A + "actor.megatron.";
  o.layout(l, m);  // TP, PP, CP, EP, ETP, sequence parallel
  if (l.vpp > 0) o.plain(m + "virtual_pipeline_model_parallel_size", l.vpp);
  o.plain(m + "use_distributed_optimizer", boolean(l.distributed_optimizer));
  o.plain(m + "param_offload", boolean(l.offload.params));
  o.plain(m + "grad_offload", boolean(l.offload.grads));
  o.plain(m + "optimizer_offload", boolean(l.offload.optimizer));
  o.plain(m + "use_remove_padding", boolean(w.remove_padding));
  o.plain(m + "dtype", w.dtype == Dtype::kFp16 ? "float16" : "bfloat16");
  const std::string tc = m + "override_transformer_config.";
  if (w.dtype == Dtype::kFp16) o.added(tc + "fp16", "true");
  if (l.recompute == Recompute::kFull) {
    o.plain(tc + "recompute_granularity", "full");
    o.plain(tc + "recompute_method",
            l.recompute_method == RecomputeMethod::kBlock ? "block" : "uniform");
    o.plain(tc + "recompute_num_layers", l.recompute_layers);
  } else {
    o.plain(tc + "recompute_granularity", "null");
  }
  if (l.first_stage_layers > 0)
    o.added(tc + "num_layers_in_first_pipeline_stage", std::to_string(l.first_stage_layers));
  if (l.last_stage_layers > 0)
    o.added(tc + "num_layers_in_last_pipeline_stage", std::to_string(l.last_stage_layers));
  if (l.split_counts_embedding) o.added(tc + "account_for_embedding_in_pipeline_split", "true");
  if (l.split_counts_loss) o.added(tc + "account_for_loss_in_pipeline_split", "true");
  if (!l.pipeline_layout.empty()) o.added(tc + "pipeline_model_parallel_layout", l.pipeline_layout);
  if (l.offload.cpu_optimizer) {
    const std::string opt = A + "actor.optim.override_optimizer_config.";
    o.added(opt + "optimizer_cpu_offload", "true");
    o.added(opt + "optimizer_offload_fraction", number(l.offload.cpu_optimizer_fraction));
  }
}

void megatron_ref(const Plan& plan, Overrides& o) {
  const Layout& l = plan.best.layout;
  const ParallelDims& d = l.dims;
  const std::string r = A + "ref.megatron.";
  o.plain(r + "tensor_model_parallel_size", l.ref_tp > 0 ? l.ref_tp : d.tp);
  o.plain(r + "pipeline_model_parallel_size", l.ref_pp > 0 ? l.ref_pp : d.pp);
  o.plain(r + "context_parallel_size", d.cp);
  o.plain(r + "expert_model_parallel_size", d.ep);
  o.plain(r + "expert_tensor_parallel_size", d.etp);
  o.plain(r + "param_offload", boolean(l.offload.params));
}

void fsdp_actor(const Plan& plan, Overrides& o) {
  const Layout& l = plan.best.layout;
  const WorkloadSpec& w = plan.workload;
  o.plain(verl_key::kStrategy, "fsdp");
  o.plain(A + "ref.strategy", "fsdp");
  // verl's FSDP worker: a (dp, sp) device mesh; the layout carries the Ulysses size as its CP.
  o.plain(A + "actor.ulysses_sequence_parallel_size", l.dims.cp);
  o.plain(A + "model.enable_gradient_checkpointing", boolean(l.recompute == Recompute::kFull));
  o.plain(A + "actor.fsdp_config.param_offload", boolean(l.offload.params));
  o.plain(A + "actor.fsdp_config.optimizer_offload", boolean(l.offload.optimizer));
  o.plain(A + "ref.fsdp_config.param_offload", boolean(l.offload.params));
  if (w.entropy_chunking) o.plain(A + "actor.entropy_from_logits_with_chunking", "true");
}

// `text` on one comment line: line breaks become spaces.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

std::vector<VerlOverride> verl_overrides(const Plan& plan) {
  const Layout& l = plan.best.layout;
  const WorkloadSpec& w = plan.workload;
  Overrides o;
  o.plain("algorithm.adv_estimator", "grpo");
  o.plain(verl_key::kTrainBatchSize, w.train_batch_size);
  o.plain(verl_key::kMaxPromptLength, w.max_prompt_length);
  o.plain(verl_key::kMaxResponseLength, w.max_response_length);
  // The model.
  o.plain(A + "model.use_remove_padding", boolean(w.remove_padding));
  o.plain(A + "model.use_fused_kernels", boolean(w.fused_logprob));
  if (w.lora.active()) {
    o.plain(A + "model.lora_rank", w.lora.rank);
    o.plain(A + "model.lora_alpha", number(w.lora.alpha));
    std::string targets;
    for (const auto& t : w.lora.targets) targets += (targets.empty() ? "" : ",") + t;
    const bool list = w.lora.targets.size() != 1 || targets != "all-linear";
    o.plain(A + "model.target_modules", list ? "[" + targets + "]" : targets);
  }
  // The actor: batch sizes, then the backend's layout.
  o.plain(verl_key::kMiniBatch, w.ppo_mini_batch_size);
  o.plain(verl_key::kMicroBatch, l.micro_batch);
  o.plain(verl_key::kPpoEpochs, w.ppo_epochs);
  o.plain(verl_key::kUseKlLoss, boolean(w.use_kl_loss));
  const std::int64_t logprob_cap = w.logprob_max_token_len_per_gpu > 0
                                       ? w.logprob_max_token_len_per_gpu
                                       : w.max_token_len_per_gpu;
  if (w.dynamic_batch()) {
    o.plain(A + "actor.use_dynamic_bsz", "true");
    o.plain(A + "actor.ppo_max_token_len_per_gpu", w.max_token_len_per_gpu);
  }
  if (l.backend == Backend::kFsdp) {
    fsdp_actor(plan, o);
  } else {
    megatron_actor(plan, o);
    megatron_ref(plan, o);
  }
  // The reference model's log-probs: the same micro batch (the memory model assumes it).
  o.plain(A + "ref.log_prob_micro_batch_size_per_gpu", l.micro_batch);
  if (w.dynamic_batch()) {
    o.plain(A + "ref.log_prob_use_dynamic_bsz", "true");
    o.plain(A + "ref.log_prob_max_token_len_per_gpu", logprob_cap);
  }
  // The rollout engine.
  o.plain(A + "rollout.name", "vllm");
  o.plain(verl_key::kRolloutN, w.rollout_n);
  o.layout(l, A + "rollout.");  // rollout TP
  if (l.rollout_dp > 1) o.plain(A + "rollout.data_parallel_size", l.rollout_dp);
  if (l.rollout_pp > 1) o.plain(A + "rollout.pipeline_model_parallel_size", l.rollout_pp);
  if (l.rollout_ep > 1) o.plain(A + "rollout.expert_parallel_size", l.rollout_ep);
  o.plain(A + "rollout.gpu_memory_utilization", number(w.gpu_memory_utilization));
  o.plain(verl_key::kRolloutMaxNumSeqs, w.max_num_seqs);
  o.plain(A + "rollout.free_cache_engine", boolean(w.free_cache_engine));
  o.plain(A + "rollout.dtype", w.dtype == Dtype::kFp16 ? "float16" : "bfloat16");
  o.plain(A + "rollout.log_prob_micro_batch_size_per_gpu", l.micro_batch);
  if (w.dynamic_batch()) {
    o.plain(A + "rollout.log_prob_use_dynamic_bsz", "true");
    o.plain(A + "rollout.log_prob_max_token_len_per_gpu", logprob_cap);
  }
  if (l.vision_data_parallel) o.added(A + "rollout.engine_kwargs.vllm.mm_encoder_tp_mode", "data");
  // The cluster.
  if (plan.cluster.device.vendor == DeviceVendor::kAscend) o.plain(verl_key::kDevice, "npu");
  o.plain(verl_key::kNnodes, plan.cluster.nodes);
  o.plain(verl_key::kGpusPerNode, plan.cluster.gpus_per_node);
  // console: the step lines `grpo-launch submit --engine verl` watches (verl/utils/tracking.py);
  // save_freq > 0: verl's default -1 saves nothing, not even before the job's end (ray_trainer.py
  // fit), so a restart would start over (docs/verl-emit.md).
  o.plain(verl_key::kLogger, "[\"console\"]");
  o.plain(verl_key::kSaveFreq, kEmittedSaveFreq);
  o.plain("trainer.project_name", "grpo-launch");
  o.plain("trainer.experiment_name", sanitize_name(plan.model.name + "-" + plan.cluster.name));
  return o.take();
}

std::vector<std::pair<std::string, std::string>> verl_environment(const Plan& plan) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : plan.env.job) {
    if (name.rfind("GRPO_", 0) == 0) continue;
    out.emplace_back(name, value);
  }
  return out;
}

std::string verl_default_model_path(const ModelSpec& model) {
  return model.hf_id.empty() ? model.name : model.hf_id;
}

Result<std::string> render_verl_script(const Plan& plan, const VerlScriptOptions& options) {
  if (!plan_ok(plan)) {
    return make_error(ErrorKind::kInfeasible,
                      "no feasible plan for " + plan.model.name + " on " + plan.cluster.name +
                          ": there is no layout to write a verl script for (see `grpo-launch "
                          "plan` without --emit)");
  }
  if (plan.cluster.device.vendor == DeviceVendor::kCpu) {
    return make_error(ErrorKind::kInvalidValue,
                      "profile " + plan.cluster.name +
                          " has CPU devices: verl runs on GPUs and Ascend NPUs only "
                          "(trainer.device cuda or npu)");
  }
  const auto env = verl_environment(plan);
  for (const auto& [name, value] : env) {
    if (!is_env_name(name)) {
      return make_error(ErrorKind::kInvalidValue,
                        "environment variable name '" + name + "' is not a shell name");
    }
    if (has_nul(value)) {
      return make_error(ErrorKind::kInvalidValue, "environment variable " + name +
                                                      " holds a NUL byte, which no shell passes");
    }
  }
  const std::string model_path = verl_default_model_path(plan.model);
  if (has_nul(model_path)) {
    return make_error(ErrorKind::kInvalidValue, "the model's hf_id holds a NUL byte");
  }
  const Layout& l = plan.best.layout;

  std::string s = "#!/usr/bin/env bash\n";
  s +=
      one_line("# verl GRPO run of " + plan.model.name + " on " + plan.cluster.name +
               ", written by grpo-launch" + (options.version.empty() ? "" : " " + options.version) +
               " (plan --emit verl; docs/verl-emit.md).") +
      "\n";
  if (!options.command.empty()) s += one_line("# Made with: " + options.command) + "\n";
  s += one_line("# Check it before a run: grpo-launch check THIS_SCRIPT --profile " +
                shell_quote(plan.cluster.name)) +
       "\n";
  s += "# Extra Hydra overrides given to this script are passed on to verl (they come last).\n";
  s += "#\n";
  const std::string summary = render_summary(plan);
  const std::string_view body = std::string_view(summary).substr(
      0, summary.empty() || summary.back() != '\n' ? summary.size() : summary.size() - 1);
  for (const std::string_view line : split(body, '\n')) {
    const std::string text = one_line(std::string(line));
    s += text.empty() ? "#\n" : "# " + text + "\n";
  }
  s += "\nset -euo pipefail\n\n";
  s += "# Edit these, or set them in the environment.\n";
  s += "MODEL_PATH=${MODEL_PATH:-" + shell_quote(model_path) + "}\n";
  s += "TRAIN_FILES=${TRAIN_FILES:-$HOME/data/gsm8k/train.parquet}\n";
  s += "VAL_FILES=${VAL_FILES:-$HOME/data/gsm8k/test.parquet}\n\n";
  if (!env.empty()) {
    s += one_line("# The plan's environment (profile " + plan.cluster.name +
                  ": [network], [env], the layout).") +
         "\n";
    for (const auto& [name, value] : env) s += "export " + name + "=" + shell_quote(value) + "\n";
    s += "\n";
  }
  s += "python3 -m verl.trainer.main_ppo";
  if (l.backend != Backend::kFsdp) s += " \\\n    --config-name=ppo_megatron_trainer";
  s += " \\\n    data.train_files=\"$TRAIN_FILES\"";
  s += " \\\n    data.val_files=\"$VAL_FILES\"";
  s += " \\\n    " + A + "model.path=\"$MODEL_PATH\"";
  for (const auto& o : verl_overrides(plan)) s += " \\\n    " + shell_quote(o.word());
  s += " \\\n    \"$@\"\n";
  return s;
}

}  // namespace grpo::core
