// Writing a model as a Hugging Face checkpoint (`grpo-launch export`, docs/hf-checkpoints.md
// "Export"): the pure parts. The parameter names and shapes transformers' Qwen classes have, in
// their state_dict order; config.json from a ModelSpec (the inverse of model_from_hf_config);
// transformers' shard split and index; fp32 -> bf16 / fp16 rounding; safetensors headers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/model_spec.h"
#include "grpo/core/result.h"
#include "grpo/hf/safetensors_header.h"

namespace grpo::core {

struct HfParameter {
  // grpo-trainer's name, the one its checkpoints use:
  // "model.layers.0.mlp.experts.3.gate_proj.weight"
  std::string name;
  std::vector<std::int64_t> shape;
  // The name in the family's Hugging Face checkpoints (hf_tensor_name): the same as `name` except
  // where the family names a module differently ("...block_sparse_moe.experts.3.w1.weight").
  std::string published;
};

// Every parameter of the Hugging Face model `spec` describes, in the order of transformers'
// state_dict (registration order: embed_tokens; per layer self_attn q, k, v, o (+ q/k norms), mlp,
// input_layernorm, post_attention_layernorm; norm; lm_head unless tied).
std::vector<HfParameter> hf_parameters(const ModelSpec& spec);

// The Hugging Face name of grpo-trainer's parameter `name` in `spec`'s family. grpo-trainer names
// its modules as transformers' Qwen2/Qwen3/Qwen3-MoE and Llama/Mistral classes do; Mixtral
// (modeling_mixtral.py MixtralDecoderLayer, MixtralSparseMoeBlock, MixtralBlockSparseTop2MLP)
// calls the MoE block `block_sparse_moe` and an expert's gate, down and up projections w1, w2, w3.
// Any other name is returned unchanged.
std::string hf_tensor_name(const ModelSpec& spec, std::string_view name);

// The transformers class `spec` maps to: the class its config.json named when it came from one
// grpo-trainer builds exactly (LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM and the
// Qwen classes); otherwise dense with q/k/v bias -> Qwen2ForCausalLM (qwen2), dense
// otherwise -> Qwen3ForCausalLM (qwen3), MoE with shared experts -> Qwen2MoeForCausalLM
// (qwen2_moe), MoE without -> Qwen3MoeForCausalLM (qwen3_moe). `caveat` is set (non-empty) when
// that class cannot hold the spec exactly (e.g. q/k norms in a Qwen2-MoE model).
struct HfArchitecture {
  std::string architecture;
  std::string model_type;
  std::string caveat;
};
HfArchitecture hf_architecture(const ModelSpec& spec);

// "float32", "bfloat16", "float16" (config.json's torch_dtype).
std::string_view torch_dtype_name(TensorDtype dtype);
// --dtype: "bf16" | "fp16" | "fp32" (also "bfloat16", "float16", "float32"). kInvalidValue.
Result<TensorDtype> parse_export_dtype(std::string_view text);

// config.json for `spec` (transformers' keys, sorted as transformers writes them, 2-space indent,
// a final newline), with torch_dtype `dtype`. model_from_hf_config reads it back to `spec` (for
// the architectures it reads).
std::string hf_config_from_spec(const ModelSpec& spec, TensorDtype dtype);
// An existing config.json with torch_dtype (and transformers 5's "dtype", when present) set to
// `dtype`; every other key kept in its order. Errors: kParse (file:line:col not tracked).
Result<std::string> hf_config_with_dtype(std::string_view json_text, std::string_view file_name,
                                         TensorDtype dtype);
// generation_config.json when the model directory has none: {"_from_model_config": true}, as
// transformers' GenerationConfig.from_model_config writes for a config without generation keys.
std::string hf_generation_config();

// --max-shard-size: an integer number of bytes, or one with a unit as transformers'
// convert_file_size_to_int reads it: KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB
// (powers of 1024), case-insensitive. Must be >= 1. kInvalidValue.
Result<std::uint64_t> parse_shard_size(std::string_view text);
inline constexpr std::string_view kDefaultMaxShardSize = "5GB";  // save_pretrained's default

struct ShardTensor {
  std::string name;
  std::uint64_t bytes = 0;
};
struct ShardPlan {
  std::vector<std::string> files;                 // "model.safetensors" or model-0000i-of-0000n
  std::vector<std::vector<std::size_t>> members;  // per file: indices into the tensors, in order
  std::uint64_t total_size = 0;                   // every tensor's bytes
  bool indexed() const { return files.size() > 1; }
};
// transformers' split (huggingface_hub split_torch_state_dict_into_shards): tensors in order; a
// tensor larger than `max_shard_size` gets a shard of its own; otherwise it starts a new shard
// when it would take the current one over the limit. One shard: "model.safetensors" (no index);
// n > 1: "model-00001-of-0000n.safetensors", ...
ShardPlan plan_shards(const std::vector<ShardTensor>& tensors, std::uint64_t max_shard_size);
// model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {name: file}},
// keys sorted, 2-space indent, final newline (as save_pretrained writes it).
std::string shard_index_json(const ShardPlan& plan, const std::vector<ShardTensor>& tensors);

// A safetensors file's first bytes for `entries` (their dtype, shape and data_offsets as given,
// in this order after "__metadata__": {"format": "pt"}): the 8-byte little-endian length and the
// compact JSON header padded with spaces to a multiple of 8.
std::string safetensors_header_bytes(const std::vector<SafetensorsEntry>& entries);

// IEEE-754 binary32 -> bfloat16 / binary16 bits, round to nearest, ties to even (as LibTorch's
// c10::BFloat16 and c10::Half convert). Overflow gives infinity, NaN a quiet NaN (bf16 0x7fc0,
// fp16 0x7e00 with the sign), fp16 underflow the nearest subnormal or zero.
std::uint16_t fp32_to_bf16(std::uint32_t fp32_bits);
std::uint16_t fp32_to_fp16(std::uint32_t fp32_bits);

}  // namespace grpo::core
