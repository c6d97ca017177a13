// The engines' rules that depend on the model family rather than on sizes (docs/parallelism.md
// "Model families"): which families verl's Megatron worker can build. Pure.
#pragma once

#include <string>

#include "grpo/core/model_spec.h"

namespace grpo::core {

// Whether verl's Megatron worker (verl b178a3cd with mbridge 10cb17f) trains `spec`'s family.
//  - The actor's forward is looked up by the config's architecture in verl's model registry
//    (verl/models/mcore/registry.py: get_mcore_forward_fn -> get_supported_model, which raises
//    NotImplementedError "Model Type: ... not supported" outside the SupportedModel enum), with or
//    without a bridge.
//  - With use_mbridge and vanilla_mbridge (verl's defaults, engine/megatron.yaml), the model is
//    built by mbridge's AutoBridge.from_config, which looks up config.json's model_type in its
//    registry and raises ValueError "Unregistered model type" otherwise (mbridge
//    core/auto_bridge.py). Megatron-Bridge (vanilla_mbridge=False) is not modelled: accepted.
// A spec from a TOML file (no architecture) is one of the Qwen classes: supported.
struct FamilySupport {
  bool ok = true;
  std::string why;  // one sentence, with the source: empty when ok
  std::string fix;
};
FamilySupport verl_megatron_supports(const ModelSpec& spec, bool use_mbridge, bool vanilla_mbridge);

// mbridge (10cb17f) passes no sliding window to Megatron except in its Gemma3 layers
// (mbridge/models/gemma3/transformer_layer.py is_sliding); its llama, mixtral and qwen2 bridges
// leave TransformerConfig.window_size at None, full attention. With a window shorter than the
// sequence (`seq_len`, prompt + response) the actor then attends to tokens the rollout (vLLM,
// which honours the window) never saw: the reason, or empty.
std::string mbridge_window_ignored(const ModelSpec& spec, bool use_mbridge, bool vanilla_mbridge,
                                   std::int64_t seq_len);

// vLLM refuses float16 for some families: the reason it gives, or empty (vllm/config/model.py
// _FLOAT16_NOT_SUPPORTED_MODELS, checked by _check_valid_dtype against config.json's model_type:
// gemma2, gemma3, gemma3_text, plamo2, glm4, "Numerical instability").
std::string vllm_float16_refusal(const ModelSpec& spec);

}  // namespace grpo::core
