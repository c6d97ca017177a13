// grpo-launch export's pure parts (core/hf_export.h): rounding to bf16 / fp16, the shard split
// and index, safetensors headers, the parameter list and config.json. Oracles: hand-derived bit
// patterns (the derivation next to each), model_spec.cpp's count_params for the parameter list,
// hf_config.cpp's reader for config.json, parse_safetensors_header for the header.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "grpo/core/hf_config.h"
#include "grpo/hf/hf_export.h"
#include "grpo/hf/safetensors_header.h"
#include "test_support.h"

namespace grpo::core {
namespace {

TEST(HfExportRounding, Bf16RoundsToNearestEven) {
  // bf16 keeps the top 16 bits of the fp32 pattern; the dropped 16 bits decide the rounding.
  EXPECT_EQ(fp32_to_bf16(0x3f800000u), 0x3f80);  // 1.0: nothing dropped
  EXPECT_EQ(fp32_to_bf16(0xbfc00000u), 0xbfc0);  // -1.5: nothing dropped, sign kept
  EXPECT_EQ(fp32_to_bf16(0x3f808000u), 0x3f80);  // dropped 0x8000: a tie, kept 0x3f80 even
  EXPECT_EQ(fp32_to_bf16(0x3f818000u), 0x3f82);  // a tie, kept 0x3f81 odd: up to even 0x3f82
  EXPECT_EQ(fp32_to_bf16(0x3f808001u), 0x3f81);  // just above the tie: up
  EXPECT_EQ(fp32_to_bf16(0x3f807fffu), 0x3f80);  // just below the tie: down
  EXPECT_EQ(fp32_to_bf16(0x40490fdbu), 0x4049);  // pi: dropped 0x0fdb < 0x8000
  EXPECT_EQ(fp32_to_bf16(0x3dcccccdu), 0x3dcd);  // 0.1f: dropped 0xcccd > 0x8000
  EXPECT_EQ(fp32_to_bf16(0x7f7fffffu), 0x7f80);  // FLT_MAX: rounds up into the exponent: inf
  EXPECT_EQ(fp32_to_bf16(0x7f800000u), 0x7f80);  // inf stays inf
  EXPECT_EQ(fp32_to_bf16(0xff800000u), 0xff80);  // -inf
  EXPECT_EQ(fp32_to_bf16(0x7fc00001u), 0x7fc0);  // NaN: the quiet NaN LibTorch gives
  EXPECT_EQ(fp32_to_bf16(0x80000000u), 0x8000);  // -0
}

TEST(HfExportRounding, Fp16RoundsToNearestEven) {
  // Normal halves: exponent rebiased by (127 - 15) << 23 = 0x38000000, 13 mantissa bits dropped.
  EXPECT_EQ(fp32_to_fp16(0x3f800000u), 0x3c00);  // 1.0
  EXPECT_EQ(fp32_to_fp16(0xc0000000u), 0xc000);  // -2.0
  // 0.1f: 0x3dcccccd - 0x38000000 = 0x05cccccd; >> 13 = 0x2e66, dropped 0x0ccd < 0x1000.
  EXPECT_EQ(fp32_to_fp16(0x3dcccccdu), 0x2e66);
  // 0x3f7ff000: 0x077ff000 >> 13 = 0x3bff, dropped 0x1000 is a tie, 0x3bff odd: up to 0x3c00
  // (the carry moves into the exponent: 1.0).
  EXPECT_EQ(fp32_to_fp16(0x3f7ff000u), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(0x477fe000u), 0x7bff);  // 65504, the largest half
  EXPECT_EQ(fp32_to_fp16(0x477fef00u), 0x7bff);  // 65519: below the halfway 65520
  EXPECT_EQ(fp32_to_fp16(0x477ff000u), 0x7c00);  // 65520: a tie, 0x7bff odd: up to inf
  EXPECT_EQ(fp32_to_fp16(0xff800000u), 0xfc00);  // -inf
  EXPECT_EQ(fp32_to_fp16(0x7fc00000u), 0x7e00);  // NaN
  EXPECT_EQ(fp32_to_fp16(0x38800000u), 0x0400);  // 2^-14, the smallest normal half
  // Subnormal halves count units of 2^-24.
  EXPECT_EQ(fp32_to_fp16(0x33800000u), 0x0001);  // 2^-24: one unit
  EXPECT_EQ(fp32_to_fp16(0x33000000u), 0x0000);  // 2^-25: half a unit, a tie: to 0 (even)
  EXPECT_EQ(fp32_to_fp16(0x33000001u), 0x0001);  // just above half a unit: one unit
  EXPECT_EQ(fp32_to_fp16(0x33c00000u), 0x0002);  // 1.5 units: a tie between 1 and 2: 2 (even)
  EXPECT_EQ(fp32_to_fp16(0x38000000u), 0x0200);  // 2^-15 = 512 units
  EXPECT_EQ(fp32_to_fp16(0xb3800000u), 0x8001);  // -2^-24
  EXPECT_EQ(fp32_to_fp16(0x00000001u), 0x0000);  // the smallest fp32 subnormal: 0
}

std::vector<ShardTensor> sized(std::vector<std::uint64_t> bytes) {
  std::vector<ShardTensor> out;
  for (std::size_t i = 0; i < bytes.size(); ++i) out.push_back({"t" + std::to_string(i), bytes[i]});
  return out;
}

TEST(HfExportShards, OneFileWhenEverythingFits) {
  const ShardPlan p = plan_shards(sized({1, 2, 3}), 100);
  EXPECT_EQ(p.files, std::vector<std::string>{"model.safetensors"});
  EXPECT_FALSE(p.indexed());
  EXPECT_EQ(p.total_size, 6u);
  // Exactly at the limit still fits: 4 + 4 is not more than 8.
  EXPECT_EQ(plan_shards(sized({4, 4}), 8).files.size(), 1u);
}

TEST(HfExportShards, SplitsAsTransformers) {
  // 4 + 4 = 8 fits, + 4 would be 12 > 8: a new shard.
  ShardPlan p = plan_shards(sized({4, 4, 4}), 8);
  ASSERT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.files[0], "model-00001-of-00002.safetensors");
  EXPECT_EQ(p.files[1], "model-00002-of-00002.safetensors");
  EXPECT_EQ(p.members[0], (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(p.members[1], (std::vector<std::size_t>{2}));
  EXPECT_EQ(p.total_size, 12u);
  // A tensor over the limit gets a shard of its own at once; the open shard continues after it
  // (huggingface_hub's split_state_dict_into_shards_factory).
  p = plan_shards(sized({3, 10, 3}), 8);
  ASSERT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.members[0], (std::vector<std::size_t>{1}));
  EXPECT_EQ(p.members[1], (std::vector<std::size_t>{0, 2}));
  // Ten shards or more keep five digits.
  p = plan_shards(sized(std::vector<std::uint64_t>(12, 5)), 5);
  ASSERT_EQ(p.files.size(), 12u);
  EXPECT_EQ(p.files[11], "model-00012-of-00012.safetensors");
}

TEST(HfExportShards, IndexJson) {
  const auto tensors = sized({4, 4, 4});
  const ShardPlan p = plan_shards(tensors, 8);
  EXPECT_EQ(shard_index_json(p, tensors), R"({
  "metadata": {
    "total_size": 12
  },
  "weight_map": {
    "t0": "model-00001-of-00002.safetensors",
    "t1": "model-00001-of-00002.safetensors",
    "t2": "model-00002-of-00002.safetensors"
  }
}
)");
}

TEST(HfExportShards, ShardSizes) {
  EXPECT_EQ(*parse_shard_size("5GB"), 5'000'000'000u);
  EXPECT_EQ(*parse_shard_size("2GiB"), 2147483648u);
  EXPECT_EQ(*parse_shard_size("10mb"), 10'000'000u);
  EXPECT_EQ(*parse_shard_size("300KiB"), 307200u);
  EXPECT_EQ(*parse_shard_size("123"), 123u);
  for (const char* bad :
       {"", "GB", "0", "5XB", "-1", "1.5GB", "99999999999999999999", "20000000000TB"}) {
    const auto r = parse_shard_size(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidValue);
    EXPECT_NE(r.error().message.find("--max-shard-size"), std::string::npos);
  }
  EXPECT_EQ(*parse_export_dtype("bf16"), TensorDtype::kBF16);
  EXPECT_EQ(*parse_export_dtype("fp16"), TensorDtype::kF16);
  EXPECT_EQ(*parse_export_dtype("fp32"), TensorDtype::kF32);
  EXPECT_FALSE(parse_export_dtype("int8").ok());
}

TEST(HfExportSafetensors, HeaderReadsBack) {
  SafetensorsEntry a{"a", TensorDtype::kBF16, {2, 3}, 0, 12};
  SafetensorsEntry b{"b", TensorDtype::kBF16, {1}, 12, 14};
  const std::string head = safetensors_header_bytes({a, b});
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
      R"("b":{"dtype":"BF16","shape":[1],"data_offsets":[12,14]}})";
  // 112 characters of JSON, padded to 112 (already a multiple of 8) or more with spaces.
  const std::size_t padded = (json.size() + 7) / 8 * 8;
  ASSERT_EQ(head.size(), 8 + padded);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(head[i]);
  EXPECT_EQ(n, padded);
  EXPECT_EQ(head.substr(8, json.size()), json);
  EXPECT_EQ(head.substr(8 + json.size()), std::string(padded - json.size(), ' '));
  const auto parsed = parse_safetensors_header(head + std::string(14, '\0'), "x.safetensors");
  ASSERT_TRUE(parsed.ok()) << parsed.error().str();
  ASSERT_EQ(parsed->tensors.size(), 2u);
  EXPECT_EQ(parsed->tensors[0].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(parsed->metadata.at("format"), "pt");
}

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

TEST(HfExportModel, ParametersCountAsTheSpec) {
  // count_params (model_spec.cpp, the planner's count) is an independent count of the same model.
  for (const char* name : {"tiny-dense", "tiny-moe", "qwen2.5-7b", "qwen3-8b", "qwen3-30b-moe",
                           "qwen2-57b-a14b-moe", "qwen2.5-0.5b"}) {
    const ModelSpec spec = test::model(name);
    std::int64_t total = 0;
    for (const auto& p : hf_parameters(spec)) total += numel(p.shape);
    EXPECT_EQ(total, count_params(spec).total()) << name;
  }
  // tiny-dense, transformers' registration order, written out by hand for layer 0.
  const auto p = hf_parameters(test::model("tiny-dense"));
  const std::vector<std::string> first = {"model.embed_tokens.weight",
                                          "model.layers.0.self_attn.q_proj.weight",
                                          "model.layers.0.self_attn.k_proj.weight",
                                          "model.layers.0.self_attn.v_proj.weight",
                                          "model.layers.0.self_attn.o_proj.weight",
                                          "model.layers.0.self_attn.q_norm.weight",
                                          "model.layers.0.self_attn.k_norm.weight",
                                          "model.layers.0.mlp.gate_proj.weight",
                                          "model.layers.0.mlp.up_proj.weight",
                                          "model.layers.0.mlp.down_proj.weight",
                                          "model.layers.0.input_layernorm.weight",
                                          "model.layers.0.post_attention_layernorm.weight",
                                          "model.layers.1.self_attn.q_proj.weight"};
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(p[i].name, first[i]);
  EXPECT_EQ(p[2].shape, (std::vector<std::int64_t>{64, 128}));  // 2 KV heads x 32, hidden 128
  EXPECT_EQ(p[9].shape, (std::vector<std::int64_t>{128, 384}));
  EXPECT_EQ(p.back().name, "lm_head.weight");
  EXPECT_EQ(p[p.size() - 2].name, "model.norm.weight");
}

TEST(HfExportModel, ConfigReadsBackToTheSpec) {
  for (const char* name : {"tiny-dense", "qwen2.5-7b", "qwen3-8b", "qwen3-30b-moe"}) {
    const ModelSpec spec = test::model(name);
    EXPECT_TRUE(hf_architecture(spec).caveat.empty()) << name;
    const std::string text = hf_config_from_spec(spec, TensorDtype::kBF16);
    const auto back = model_from_hf_config(text, "config.json", name);
    ASSERT_TRUE(back.ok()) << name << ": " << back.error().str();
    EXPECT_EQ(back->hidden_size, spec.hidden_size) << name;
    EXPECT_EQ(back->num_layers, spec.num_layers) << name;
    EXPECT_EQ(back->num_attention_heads, spec.num_attention_heads) << name;
    EXPECT_EQ(back->num_kv_heads, spec.num_kv_heads) << name;
    EXPECT_EQ(back->head_dim, spec.head_dim) << name;
    EXPECT_EQ(back->vocab_size, spec.vocab_size) << name;
    EXPECT_EQ(back->tied_embeddings, spec.tied_embeddings) << name;
    EXPECT_EQ(back->qkv_bias, spec.qkv_bias) << name;
    EXPECT_EQ(back->qk_norm, spec.qk_norm) << name;
    EXPECT_EQ(back->rope_theta, spec.rope_theta) << name;
    EXPECT_EQ(back->rms_norm_eps, spec.rms_norm_eps) << name;
    EXPECT_EQ(back->max_position_embeddings, spec.max_position_embeddings) << name;
    EXPECT_EQ(back->num_experts, spec.num_experts) << name;
    if (spec.is_moe()) {
      EXPECT_EQ(back->ffn_hidden_size, spec.ffn_hidden_size) << name;
      EXPECT_EQ(back->experts_per_token, spec.experts_per_token) << name;
      EXPECT_EQ(back->moe_ffn_hidden_size, spec.moe_ffn_hidden_size) << name;
      EXPECT_EQ(back->norm_topk_prob, spec.norm_topk_prob) << name;
      EXPECT_EQ(back->first_k_dense_layers, spec.first_k_dense_layers) << name;
    } else {
      EXPECT_EQ(back->ffn_hidden_size, spec.ffn_hidden_size) << name;
    }
    EXPECT_EQ(count_params(*back).total(), count_params(spec).total()) << name;
  }
  // tiny-moe (q/k norms and a gated shared expert) is written as Qwen2-MoE, which transformers
  // cannot hold exactly: the caveat says so.
  const HfArchitecture a = hf_architecture(test::model("tiny-moe"));
  EXPECT_EQ(a.architecture, "Qwen2MoeForCausalLM");
  EXPECT_NE(a.caveat.find("q/k norms"), std::string::npos);
}

// Mixtral's own names (modeling_mixtral.py: MixtralDecoderLayer.block_sparse_moe,
// MixtralSparseMoeBlock.gate / .experts, MixtralBlockSparseTop2MLP.w1 / w2 / w3, written out here
// by hand), and the classes grpo-trainer builds kept as their config.json named them.
TEST(HfExportModel, MixtralNamesAndKeptArchitectures) {
  auto mixtral = model_from_hf_config(
      R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 32, "intermediate_size": 24,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "vocab_size": 80, "num_local_experts": 4, "num_experts_per_tok": 2})",
      "m/config.json", "m");
  ASSERT_TRUE(mixtral.ok()) << mixtral.error().str();
  std::map<std::string, std::string> published;
  for (const auto& p : hf_parameters(*mixtral)) published[p.name] = p.published;
  EXPECT_EQ(published.at("model.layers.1.mlp.gate.weight"),
            "model.layers.1.block_sparse_moe.gate.weight");
  EXPECT_EQ(published.at("model.layers.0.mlp.experts.3.gate_proj.weight"),
            "model.layers.0.block_sparse_moe.experts.3.w1.weight");
  EXPECT_EQ(published.at("model.layers.0.mlp.experts.3.down_proj.weight"),
            "model.layers.0.block_sparse_moe.experts.3.w2.weight");
  EXPECT_EQ(published.at("model.layers.0.mlp.experts.3.up_proj.weight"),
            "model.layers.0.block_sparse_moe.experts.3.w3.weight");
  EXPECT_EQ(published.at("model.layers.0.self_attn.q_proj.weight"),
            "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(published.at("lm_head.weight"), "lm_head.weight");
  EXPECT_EQ(published.size(), 1u + 2 * (4 + 1 + 4 * 3 + 2) + 1 + 1);
  const HfArchitecture a = hf_architecture(*mixtral);
  EXPECT_EQ(a.architecture, "MixtralForCausalLM");
  EXPECT_EQ(a.model_type, "mixtral");
  EXPECT_TRUE(a.caveat.empty());
  // The same spec from a TOML file (no architecture) is written as Qwen3-MoE, as before.
  ModelSpec toml = *mixtral;
  toml.architecture.clear();
  EXPECT_EQ(hf_architecture(toml).architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(hf_tensor_name(toml, "model.layers.0.mlp.gate.weight"),
            "model.layers.0.mlp.gate.weight");
}

TEST(HfExportModel, CopiedConfigGetsTheDtype) {
  const auto out = hf_config_with_dtype(R"({"b": 1, "torch_dtype": "float32", "a": [1, 2]})",
                                        "config.json", TensorDtype::kBF16);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out,
            "{\n  \"b\": 1,\n  \"torch_dtype\": \"bfloat16\",\n  \"a\": [\n    1,\n    "
            "2\n  ]\n}\n");
  const auto v5 = hf_config_with_dtype(R"({"dtype": "float32"})", "c.json", TensorDtype::kF16);
  EXPECT_EQ(*v5, "{\n  \"dtype\": \"float16\",\n  \"torch_dtype\": \"float16\"\n}\n");
  EXPECT_FALSE(hf_config_with_dtype("[1]", "c.json", TensorDtype::kF16).ok());
  EXPECT_FALSE(hf_config_with_dtype("{", "c.json", TensorDtype::kF16).ok());
}

// Golden: the config.json and the index grpo-launch export writes for tiny-dense in bf16 with
// --max-shard-size 500KB (its 804,224 parameters are 1,608,448 bytes in bf16: four shards; by hand:
// shard 1 takes the embeddings (16,384 bytes), layer 0 (393,856) and layer 1 q, k, v (65,536):
// 475,776 bytes; layer 1 o_proj (32,768) would take it to 508,544 > 500,000).
TEST(GoldenHfExport, TinyDenseConfigAndIndex) {
  const ModelSpec spec = test::model("tiny-dense");
  test::expect_golden("export-tiny-dense-config.json",
                      hf_config_from_spec(spec, TensorDtype::kBF16));
  std::vector<ShardTensor> tensors;
  for (const auto& p : hf_parameters(spec)) {
    tensors.push_back({p.name, static_cast<std::uint64_t>(numel(p.shape)) * 2});
  }
  const ShardPlan plan = plan_shards(tensors, *parse_shard_size("500KB"));
  ASSERT_EQ(plan.files.size(), 4u);
  EXPECT_EQ(plan.members[0].size(), 1u + 11u + 3u);  // embeddings, layer 0 (11), layer 1 q, k, v
  EXPECT_EQ(plan.total_size, 1'608'448u);
  test::expect_golden("export-tiny-dense-index.json", shard_index_json(plan, tensors));
}

}  // namespace
}  // namespace grpo::core
