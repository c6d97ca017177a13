// A Hugging Face model directory's config.json read into a ModelSpec (docs/hf-checkpoints.md).
// Pure: the text is given. Architectures read: Qwen2ForCausalLM (Qwen2, Qwen2.5),
// Qwen3ForCausalLM and Qwen3MoeForCausalLM. A key is optional exactly when transformers'
// configuration class (configuration_qwen2.py / qwen3 / qwen3_moe: Qwen2Config, Qwen3Config,
// Qwen3MoeConfig) has a default for it, and then takes that default. Whatever ModelSpec cannot
// express (sliding-window layers, rope scaling, an MoE layer pattern other than a leading run of
// dense layers, bias on the output projection, an activation other than SiLU) is refused with one
// line naming the key, never approximated.
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
