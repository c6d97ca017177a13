// A Hugging Face model directory's config.json read into a ModelSpec (docs/hf-checkpoints.md).
// Pure: the text is given. Architectures read: Qwen2ForCausalLM (Qwen2, Qwen2.5),
// Qwen3ForCausalLM, Qwen3MoeForCausalLM, Qwen2MoeForCausalLM, LlamaForCausalLM,
// MistralForCausalLM, MixtralForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM (also
// Kimi-K2, Moonlight), Glm4MoeForCausalLM, GptOssForCausalLM, Gemma2ForCausalLM,
// Gemma3ForCausalLM, Phi3ForCausalLM (Phi-3, Phi-4), OlmoeForCausalLM, Olmo2ForCausalLM and the
// Qwen2_5_VL / Qwen3VL / Qwen3VLMoe / Gemma3 ForConditionalGeneration models (vision tower
// included), each counted weight by weight as its modeling_<family>.py registers them. A key is
// optional exactly when transformers' configuration class (configuration_<family>.py) has a
// default for it, and then takes that default. Whatever ModelSpec cannot express (an MoE layer
// pattern other than a leading run of dense layers, Llama's and Qwen3's bias on o_proj, an
// activation the family does not use, hybrid linear-attention or per-layer heterogeneous
// architectures, SigLIP's pooling head) is refused with one line naming the key, never
// approximated. Rope scaling and sliding windows are recorded (they change no count).
#pragma once

#include <string_view>

#include "grpo/core/model_spec.h"
#include "grpo/core/result.h"

namespace grpo::core {

// `file_name` is where `json_text` came from (config.json's path: errors point into it and it
// becomes spec.source); `model_name` becomes spec.name (the directory's name).
// Errors (one line, file:line:col of the offending key when it is found in the text):
//   kParse         not JSON, or not a JSON object
//   kInvalidValue  an unknown architecture, a value out of range, or a setting ModelSpec cannot
//                  express
//   kWrongType     a key of the wrong JSON type
Result<ModelSpec> model_from_hf_config(std::string_view json_text, std::string_view file_name,
                                       std::string_view model_name);

}  // namespace grpo::core
