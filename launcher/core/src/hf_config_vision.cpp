// Vision towers of the vision-language checkpoints hf_config reads (Qwen2.5-VL, Qwen3-VL,
// Qwen3-VL-MoE and Gemma3), counted from vision_config weight by weight into ModelSpec::vision.
// Absent keys take Qwen2_5_VLVisionConfig's / Qwen3VLVisionConfig's defaults
// (configuration_qwen2_5_vl.py, configuration_qwen3_vl.py).
#include <string>

#include "hf_config_reader.h"

namespace grpo::core::hf_detail {
namespace {

constexpr std::int64_t kMaxVisionDim = std::int64_t{1} << 16;

struct VisionSizes {
  std::int64_t depth = 0, hidden = 0, ffn = 0, heads = 0, in_channels = 0, patch = 0,
               temporal_patch = 0, merge = 0, out = 0;
};

// `key`, else the older name `alias` (Qwen2.5-VL's published config.json says in_chans and
// spatial_patch_size), else `def`.
Status read_aliased(const ConfigReader& v, const char* key, const char* alias, std::int64_t def,
                    std::int64_t& out) {
  const char* name = v.is_null(key) && !v.is_null(alias) ? alias : key;
  return v.read_int(name, out, def, 1, kMaxVisionDim);
}

Status read_sizes(const ConfigReader& v, const VisionSizes& d, VisionSizes& s) {
  GRPO_TRY_STATUS(v.read_int("depth", s.depth, d.depth, 1, kMaxLayers));
  GRPO_TRY_STATUS(v.read_int("hidden_size", s.hidden, d.hidden, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(v.read_int("intermediate_size", s.ffn, d.ffn, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(v.read_int("num_heads", s.heads, d.heads, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(read_aliased(v, "in_channels", "in_chans", d.in_channels, s.in_channels));
  GRPO_TRY_STATUS(read_aliased(v, "patch_size", "spatial_patch_size", d.patch, s.patch));
  GRPO_TRY_STATUS(
      v.read_int("temporal_patch_size", s.temporal_patch, d.temporal_patch, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(v.read_int("spatial_merge_size", s.merge, d.merge, 1, 64));
  GRPO_TRY_STATUS(v.read_int("out_hidden_size", s.out, d.out, 1, kMaxDim));
  if (s.hidden % s.heads != 0) {
    return v.fail(ErrorKind::kInvalidValue, "num_heads",
                  "hidden_size " + std::to_string(s.hidden) + " is not a multiple of it");
  }
  return ok_status();
}

void record(const VisionSizes& s, std::int64_t params, ModelSpec& m) {
  m.vision.params = params;
  m.vision.hidden_size = s.hidden;
  m.vision.num_layers = s.depth;
  m.vision.num_heads = s.heads;
  m.vision.patch_size = s.patch;
}

// A Linear in -> out with its bias.
std::int64_t linear(std::int64_t in, std::int64_t out) {
  return sat_add(sat_mul(in, out), out);
}

}  // namespace

// Qwen2.5-VL (modeling_qwen2_5_vl.py Qwen2_5_VisionTransformerPretrainedModel): patch_embed, a
// Conv3d of in_channels x temporal_patch x patch x patch -> hidden without bias; per block
// (Qwen2_5_VLVisionBlock) norm1 and norm2 (RMSNorm, hidden), attn.qkv hidden -> 3 hidden and
// attn.proj hidden -> hidden with biases, a gated MLP (Qwen2_5_VLMLP: gate, up hidden -> ffn and
// down ffn -> hidden, with biases); the merger (Qwen2_5_VLPatchMerger): ln_q RMSNorm (hidden),
// Linear hidden x merge^2 -> the same and -> out_hidden_size, with biases. Rotary embeddings and
// the window pattern (fullatt_block_indexes) have no weights.
Status read_qwen25_vision(const ConfigReader& v, ModelSpec& m) {
  VisionSizes s;
  GRPO_TRY_STATUS(read_sizes(v, VisionSizes{32, 3584, 3420, 16, 3, 14, 2, 2, 3584}, s));
  const std::int64_t d = s.hidden, merged = s.hidden * s.merge * s.merge;
  std::int64_t n = sat_mul(sat_mul(s.in_channels * s.temporal_patch, s.patch * s.patch), d);
  std::int64_t block = sat_add(sat_mul(2, d), sat_add(linear(d, 3 * d), linear(d, d)));
  block = sat_add(block, sat_add(sat_mul(2, linear(d, s.ffn)), linear(s.ffn, d)));
  n = sat_add(n, sat_mul(s.depth, block));
  n = sat_add(n, sat_add(d, sat_add(linear(merged, merged), linear(merged, s.out))));
  record(s, n, m);
  return ok_status();
}

// Qwen3-VL and Qwen3-VL-MoE (modeling_qwen3_vl.py Qwen3VLVisionModel, which qwen3_vl_moe
// reuses): patch_embed a Conv3d with bias; pos_embed, an Embedding of num_position_embeddings x
// hidden; per block norm1 and norm2 (LayerNorm: weight and bias), attn.qkv and attn.proj with
// biases, a plain MLP (linear_fc1 hidden -> ffn, linear_fc2 ffn -> hidden, with biases); the
// merger (Qwen3VLVisionPatchMerger): a LayerNorm over hidden, linear_fc1 hidden x merge^2 -> the
// same and linear_fc2 -> out_hidden_size, with biases; one more merger per
// deepstack_visual_indexes entry, whose LayerNorm spans hidden x merge^2 (use_postshuffle_norm).
Status read_qwen3_vision(const ConfigReader& v, ModelSpec& m) {
  VisionSizes s;
  GRPO_TRY_STATUS(read_sizes(v, VisionSizes{27, 1152, 4304, 16, 3, 16, 2, 2, 3584}, s));
  std::int64_t positions = 0;
  GRPO_TRY_STATUS(v.read_int("num_position_embeddings", positions, 2304, 0, std::int64_t{1} << 24));
  std::int64_t deepstack = 3;
  if (const json* ds = v.get("deepstack_visual_indexes"); ds != nullptr && !ds->is_null()) {
    if (!ds->is_array()) {
      return v.fail(ErrorKind::kWrongType, "deepstack_visual_indexes", "expected a list");
    }
    deepstack = static_cast<std::int64_t>(ds->size());
  }
  const std::int64_t d = s.hidden, merged = s.hidden * s.merge * s.merge;
  std::int64_t n =
      sat_add(sat_mul(sat_mul(s.in_channels * s.temporal_patch, s.patch * s.patch), d), d);
  n = sat_add(n, sat_mul(positions, d));
  std::int64_t block = sat_add(sat_mul(4, d), sat_add(linear(d, 3 * d), linear(d, d)));
  block = sat_add(block, sat_add(linear(d, s.ffn), linear(s.ffn, d)));
  n = sat_add(n, sat_mul(s.depth, block));
  const std::int64_t merger_linears = sat_add(linear(merged, merged), linear(merged, s.out));
  n = sat_add(n, sat_add(sat_mul(2, d), merger_linears));
  n = sat_add(n, sat_mul(deepstack, sat_add(sat_mul(2, merged), merger_linears)));
  record(s, n, m);
  return ok_status();
}

// Gemma3ForConditionalGeneration (modeling_gemma3.py): the vision tower is a SiglipVisionModel
// (modeling_siglip.py): patch_embedding, a Conv2d num_channels x patch x patch -> hidden with
// bias; position_embedding, (image_size / patch_size)^2 x hidden; per encoder layer
// layer_norm1 and layer_norm2 (LayerNorm: weight and bias), q/k/v/out_proj hidden -> hidden
// with biases, mlp fc1 hidden -> intermediate and fc2 back, with biases; post_layernorm. The
// attention-pooling head (vision_use_head) is refused: Gemma3's configs turn it off. Then
// Gemma3MultiModalProjector: mm_input_projection_weight [vision hidden, text hidden] and
// mm_soft_emb_norm over the vision hidden size. Defaults: SiglipVisionConfig's.
Status read_gemma3_vision(const ConfigReader& v, ModelSpec& m) {
  VisionSizes s;
  GRPO_TRY_STATUS(v.read_int("num_hidden_layers", s.depth, 12, 1, kMaxLayers));
  GRPO_TRY_STATUS(v.read_int("hidden_size", s.hidden, 768, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(v.read_int("intermediate_size", s.ffn, 3072, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(v.read_int("num_attention_heads", s.heads, 12, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(v.read_int("num_channels", s.in_channels, 3, 1, kMaxVisionDim));
  GRPO_TRY_STATUS(v.read_int("patch_size", s.patch, 16, 1, kMaxVisionDim));
  std::int64_t image = 224;
  GRPO_TRY_STATUS(v.read_int("image_size", image, 224, 1, kMaxVisionDim));
  bool head = true;
  GRPO_TRY_STATUS(v.read_bool("vision_use_head", head, true));
  if (head) {
    return v.fail(ErrorKind::kInvalidValue, "vision_use_head",
                  "true (SigLIP's attention-pooling head) is not counted; Gemma3 sets false");
  }
  const std::int64_t d = s.hidden, side = image / s.patch;
  std::int64_t n = sat_add(sat_mul(sat_mul(s.in_channels, s.patch * s.patch), d), d);
  n = sat_add(n, sat_mul(side * side, d));
  std::int64_t layer = sat_add(sat_mul(4, d), sat_mul(4, linear(d, d)));
  layer = sat_add(layer, sat_add(linear(d, s.ffn), linear(s.ffn, d)));
  n = sat_add(n, sat_add(sat_mul(s.depth, layer), sat_mul(2, d)));
  n = sat_add(n, sat_add(sat_mul(d, m.hidden_size), d));  // the projector
  record(s, n, m);
  return ok_status();
}

}  // namespace grpo::core::hf_detail
