#include "grpo/core/family_rules.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace grpo::core {
namespace {

// verl b178a3cd verl/models/mcore/registry.py, enum SupportedModel (the causal-LM and VL values),
// each with the mbridge model_type that bridges it ("" when mbridge has none).
struct VerlModel {
  std::string_view architecture, mbridge_type;
};
constexpr VerlModel kVerlArchitectures[] = {
    {"LlamaForCausalLM", "llama"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl"},
    {"Llama4ForConditionalGeneration", ""},
    {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
    {"Glm4MoeForCausalLM", "glm4_moe"},
    {"Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe"},
    {"Qwen3VLForConditionalGeneration", "qwen3_vl"},
    {"GptOssForCausalLM", ""},
    {"MiMoForCausalLM", "mimo"},
};

// mbridge 10cb17f: every @register_model(...) under mbridge/models.
constexpr std::string_view kMbridgeModelTypes[] = {
    "deepseek_v3",    "gemma3",    "glm4v",        "glm4v_moe", "glm4_moe",
    "internvl_chat",  "llama",     "mimo",         "mixtral",   "qwen2",
    "qwen2_5_vl",     "qwen2_moe", "qwen3",        "qwen3_5",   "qwen3_5_moe",
    "qwen3_omni_moe", "qwen3_vl",  "qwen3_vl_moe", "qwen3_moe"};

template <std::size_t N>
bool contains(const std::string_view (&list)[N], std::string_view x) {
  return std::find(std::begin(list), std::end(list), x) != std::end(list);
}

}  // namespace

FamilySupport verl_megatron_supports(const ModelSpec& spec, bool use_mbridge,
                                     bool vanilla_mbridge) {
  FamilySupport s;
  if (spec.architecture.empty()) return s;
  const auto known =
      std::find_if(std::begin(kVerlArchitectures), std::end(kVerlArchitectures),
                   [&](const VerlModel& v) { return v.architecture == spec.architecture; });
  if (known == std::end(kVerlArchitectures)) {
    s.ok = false;
    s.why = "verl's Megatron worker has no model for " + spec.architecture +
            " (verl/models/mcore/registry.py get_supported_model raises \"Model Type: " +
            spec.architecture + " not supported\")";
    s.fix =
        "use verl's FSDP strategy (actor_rollout_ref.actor.strategy=fsdp; plan with "
        "--set backend=fsdp)";
    return s;
  }
  if (use_mbridge && vanilla_mbridge && !spec.model_type.empty() &&
      !contains(kMbridgeModelTypes, spec.model_type)) {
    s.ok = false;
    s.why =
        "mbridge, which verl's Megatron worker builds the model with by default, has no bridge "
        "for model_type '" +
        spec.model_type + "' (mbridge AutoBridge.from_config raises \"Unregistered model type\")";
    // Kimi-K2 is a DeepseekV3ForCausalLM with model_type kimi_k2: mbridge's own memory estimator
    // asks for model_type deepseek_v3 (mbridge memory_estimator/webui/script.js).
    s.fix = (known->mbridge_type.empty()
                 ? std::string()
                 : "set \"model_type\": \"" + std::string(known->mbridge_type) +
                       "\" in config.json (the class is " + spec.architecture + "), ") +
            "set actor_rollout_ref.actor.megatron.vanilla_mbridge=False (Megatron-Bridge) or use "
            "verl's FSDP strategy (actor_rollout_ref.actor.strategy=fsdp)";
  }
  return s;
}

std::string vllm_float16_refusal(const ModelSpec& spec) {
  constexpr std::string_view kNoFloat16[] = {"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"};
  if (!contains(kNoFloat16, spec.model_type)) return "";
  return "vLLM refuses float16 for model_type '" + spec.model_type +
         "' (\"Numerical instability. Please use bfloat16 or float32 instead.\", "
         "vllm/config/model.py _check_valid_dtype)";
}

std::string mbridge_window_ignored(const ModelSpec& spec, bool use_mbridge, bool vanilla_mbridge,
                                   std::int64_t seq_len) {
  if (!use_mbridge || !vanilla_mbridge || spec.sliding_window_layers == 0 ||
      spec.sliding_window <= 0 || spec.sliding_window >= seq_len || spec.model_type == "gemma3") {
    return {};
  }
  return std::to_string(spec.sliding_window_layers) + " layer(s) of " + spec.name +
         " attend over a sliding window of " + std::to_string(spec.sliding_window) +
         " tokens, shorter than the " + std::to_string(seq_len) +
         "-token sequences, but mbridge builds them with full attention (no window_size in its " +
         (spec.model_type.empty() ? std::string("model") : spec.model_type) +
         " bridge): the actor's log-probs of tokens past the window differ from the rollout's";
}

}  // namespace grpo::core
