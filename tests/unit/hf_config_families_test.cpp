// config.json -> ModelSpec for the families beyond Qwen/Llama/Mistral/Mixtral (core/hf_config.h):
// every count below is derived by hand from the published config.json values (the keys that
// matter, as published; copies of the official files in ai-dynamo/aiconfigurator's
// model_configs and mlc-ai/mlc-llm's model_preset.py) and compared in the comment with the
// published total. h = hidden_size, V = vocab_size, L = num_hidden_layers.
#include <gtest/gtest.h>

#include <string>

#include "grpo/core/family_rules.h"
#include "grpo/core/hf_config.h"
#include "test_support.h"

namespace grpo::core {
namespace {

ModelSpec parse(const std::string& text) {
  auto m = model_from_hf_config(text, "m/config.json", "m");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str());
  return m.ok() ? m.value() : ModelSpec{};
}

// Within `rel` of a published figure.
void expect_near_published(std::int64_t count, double published, double rel = 0.005) {
  EXPECT_NEAR(static_cast<double>(count) / published, 1.0, rel) << count << " vs " << published;
}

// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json): h 7168, V 129280, 61 layers (3 dense), 128
// heads, MLA q_lora 1536, kv_lora 512, nope 128, rope 64, v 128; 256 experts of 2048, top-8,
// one shared expert, 1 MTP layer.
//   MLA per layer: q_a_proj 7168 x 1536 = 11,010,048 + q_a_layernorm 1,536 + q_b_proj 1536 x
//     128 x 192 = 37,748,736 + kv_a_proj_with_mqa 7168 x 576 = 4,128,768 + kv_a_layernorm 512 +
//     kv_b_proj 512 x 128 x 256 = 16,777,216 + o_proj 128 x 128 x 7168 = 117,440,512
//     = 187,107,328.
//   Dense layer: + MLP 3 x 7168 x 18432 = 396,361,728 + 2 norms 14,336 = 583,483,392.
//   MoE layer: + router 256 x 7168 + e_score_correction_bias 256 = 1,835,264 + experts 256 x
//     3 x 7168 x 2048 = 11,274,289,152 + shared 44,040,192 + norms 14,336 = 11,507,286,272.
//   Total: 3 x 583,483,392 + 58 x 11,507,286,272 + embed and lm_head 2 x 926,679,040 + final
//     norm 7,168 = 671,026,419,200 (published "671B total").
//   MTP layer 61: an MoE layer 11,507,286,272 + enorm, hnorm, shared_head.norm 21,504 + eh_proj
//     2 x 7168 x 7168 = 102,760,448 + its embed_tokens and shared_head.head 1,853,358,080
//     = 13,463,426,304 ("14B of MTP"). Stored 684,489,845,504: the bf16 copy of the checkpoint
//     shows "684B params" (685B on Hugging Face counts the FP8 weight_scale_inv tensors too).
//   Active: routed experts at 8/256: 37,552,297,472 (published "37B activated").
const char* kDeepseekV3 =
    R"({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
  "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
  "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280,
  "tie_word_embeddings": false, "attention_bias": false, "n_routed_experts": 256,
  "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1,
  "first_k_dense_replace": 3, "moe_layer_freq": 1, "norm_topk_prob": true, "q_lora_rank": 1536,
  "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
  "num_nextn_predict_layers": 1, "hidden_act": "silu", "n_group": 8, "topk_group": 4,
  "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
  "max_position_embeddings": 163840, "rms_norm_eps": 1e-06, "rope_theta": 10000,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
  "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}})";

TEST(HfConfigFamilies, DeepseekV3MlaMoeAndMtp) {
  const ModelSpec m = parse(kDeepseekV3);
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.head_dim, 192);
  EXPECT_EQ(m.num_kv_heads, 128);
  EXPECT_EQ(m.rope_scaling, "yarn");
  EXPECT_EQ(m.first_k_dense_layers, 3);
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_EQ(attention_params_per_layer(m), 187'107'328);
  const ParamCounts c = count_params(m);
  EXPECT_EQ(c.total(), 3 * 583'483'392LL + 58 * 11'507'286'272LL + 2 * 926'679'040LL + 7'168);
  EXPECT_EQ(c.total(), 671'026'419'200LL);
  EXPECT_EQ(c.mtp, 13'463'426'304LL);
  EXPECT_EQ(c.stored(), 684'489'845'504LL);
  EXPECT_EQ(c.active(m), 37'552'297'472LL);
  expect_near_published(c.total(), 671e9);
  expect_near_published(c.stored(), 684e9);
  // The memory model's widths: q and k heads x 192, v and o heads x 128; vLLM caches the latent
  // 512 + 64 per token and layer, whole on every rank.
  EXPECT_EQ(m.q_width(), 24'576);
  EXPECT_EQ(m.kv_width(), 24'576);
  EXPECT_EQ(m.v_width(), 16'384);
  EXPECT_EQ(m.o_width(), 16'384);
  EXPECT_EQ(m.kv_cache_width(1), 576);
  EXPECT_EQ(m.kv_cache_width(8), 576);
}

// Kimi-K2-Instruct (moonshotai, DeepseekV3ForCausalLM): DeepSeek-V3's shapes with 64 heads, 384
// experts, 1 dense layer, V 163840, no MTP.
//   MLA: 11,010,048 + 1,536 + 1536 x 64 x 192 = 18,874,368 + 4,128,768 + 512 + 512 x 64 x 256 =
//     8,388,608 + 64 x 128 x 7168 = 58,720,256 -> 101,124,096.
//   MoE layer: + router 384 x 7168 + 384 = 2,752,896 + experts 384 x 44,040,192 =
//     16,911,433,728 + shared 44,040,192 + norms 14,336 = 17,059,365,248.
//   Dense layer: 101,124,096 + 396,361,728 + 14,336 = 497,500,160.
//   Total: 497,500,160 + 60 x 17,059,365,248 + 2 x 163840 x 7168 + 7,168 = 1,026,408,232,448
//     (published "1 trillion total parameters", 32B activated: a rounded figure, 2.6 % below).
TEST(HfConfigFamilies, KimiK2) {
  std::string k2 = kDeepseekV3;
  const auto set = [&](const std::string& key, const std::string& value) {
    const std::size_t at = k2.find("\"" + key + "\": ");
    ASSERT_NE(at, std::string::npos) << key;
    const std::size_t from = at + key.size() + 4;
    k2.replace(from, k2.find_first_of(",}", from) - from, value);
  };
  set("num_attention_heads", "64");
  set("num_key_value_heads", "64");
  set("n_routed_experts", "384");
  set("first_k_dense_replace", "1");
  set("vocab_size", "163840");
  set("num_nextn_predict_layers", "0");
  const ModelSpec m = parse(k2);
  EXPECT_EQ(attention_params_per_layer(m), 101'124'096);
  const ParamCounts c = count_params(m);
  EXPECT_EQ(c.total(), 497'500'160LL + 60 * 17'059'365'248LL + 2LL * 163'840 * 7'168 + 7'168);
  EXPECT_EQ(c.total(), 1'026'408'232'448LL);
  EXPECT_EQ(c.mtp, 0);
  EXPECT_EQ(c.stored(), c.total());
}

// DeepSeek-V3.2 (deepseek-ai/DeepSeek-V3.2 config.json, DeepseekV32ForCausalLM): DeepSeek-V3's
// keys plus index_n_heads 64, index_head_dim 128, index_topk 2048. Every layer's attention (the
// MTP layer's too) adds the lightning indexer (DeepSeek-V3.2-Exp inference/model.py Indexer):
//   wq_b 1536 x 64 x 128 = 12,582,912 + wk 7168 x 128 = 917,504 + k_norm weight and bias 256 +
//   weights_proj 7168 x 64 = 458,752 = 13,959,424.
//   Total: 671,026,419,200 + 61 x 13,959,424 = 671,877,944,064; MTP 13,463,426,304 + 13,959,424
//   = 13,477,385,728; stored 685,355,329,792 (Hugging Face shows 685.4B for the V3.2 checkpoints,
//   which adds the FP8 block scales, about 0.04B). Active: 37,552,297,472 + 61 x 13,959,424 =
//   38,403,822,336. vLLM's Indexer is ReplicatedLinear: whole on every TP rank.
// A one-line error naming `what` at line `line` of the file (defined below).
void expect_refused(const std::string& text, const std::string& what, std::uint32_t line);

TEST(HfConfigFamilies, DeepseekV32Indexer) {
  std::string v32 = kDeepseekV3;
  v32.replace(v32.find("DeepseekV3ForCausalLM"), 21, "DeepseekV32ForCausalLM");
  v32.replace(v32.find("\"deepseek_v3\""), 13,
              "\"deepseek_v32\", \"index_n_heads\": 64, \"index_head_dim\": 128, "
              "\"index_topk\": 2048");
  const ModelSpec m = parse(v32);
  EXPECT_EQ(m.architecture, "DeepseekV32ForCausalLM");
  EXPECT_EQ(indexer_params_per_layer(m), 13'959'424);
  EXPECT_EQ(attention_params_per_layer(m), 187'107'328 + 13'959'424);
  const ParamCounts c = count_params(m);
  EXPECT_EQ(c.total(), 671'877'944'064LL);
  EXPECT_EQ(c.mtp, 13'477'385'728LL);
  EXPECT_EQ(c.stored(), 685'355'329'792LL);
  EXPECT_EQ(c.active(m), 38'403'822'336LL);
  expect_near_published(c.stored(), 685.4e9);
  // kv_a (7168 x 576 + 512) and q_a (7169 x 1536) as for V3, and the indexer.
  EXPECT_EQ(attention_replicated_params_per_layer(m),
            7168LL * 576 + 512 + 7169LL * 1536 + 13'959'424);

  // The indexer reads the query latent; its heads hold the rotated part.
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = v32;
    return text.replace(text.find(from), from.size(), to);
  };
  expect_refused(with("\"q_lora_rank\": 1536", "\"q_lora_rank\": null"), "q_lora_rank must be set",
                 6);
  expect_refused(with("\"index_head_dim\": 128", "\"index_head_dim\": 32"),
                 "less than qk_rope_head_dim", 1);
}

// MiMo-7B-Base (XiaomiMiMo, MiMoForCausalLM; config.json as in ai-dynamo/aiconfigurator's
// model_configs): Qwen2's decoder, h 4096, 36 layers, 32 heads / 8 KV heads of 128, FFN 11008,
// V 151680, untied, one MTP layer.
//   Layer: q 4096 x 4096 = 16,777,216 + k, v 2 x 4096 x 1024 = 8,388,608 + o 16,777,216 + q/k/v
//     bias 4096 + 2 x 1024 = 6,144 -> 41,949,184; MLP 3 x 4096 x 11008 = 135,266,304; 2 norms
//     8,192 -> 177,223,680.
//   Total: 36 x 177,223,680 + 2 x 151680 x 4096 + 4,096 = 7,622,619,136 (MiMo's "7B").
//   MTP layer (MiMoMTPLayers): a layer 177,223,680 + input_proj 2 x 4096 x 4096 = 33,554,432 +
//     token_layernorm, hidden_layernorm, final_layernorm 12,288 = 210,790,400; no embeddings of
//     its own. Stored 7,833,409,536.
TEST(HfConfigFamilies, MimoIsQwen2WithMtpLayers) {
  const ModelSpec m = parse(R"({"architectures": ["MiMoForCausalLM"], "model_type": "mimo",
  "num_hidden_layers": 36, "hidden_size": 4096, "num_attention_heads": 32,
  "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 11008, "vocab_size": 151680,
  "max_position_embeddings": 32768, "rope_theta": 640000, "rms_norm_eps": 1e-05,
  "hidden_act": "silu", "attention_bias": true, "sliding_window": 32768, "max_window_layers": 32,
  "use_sliding_window": false, "num_nextn_predict_layers": 1, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16"})");
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_EQ(m.sliding_window_layers, 0);
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_EQ(attention_params_per_layer(m), 41'949'184);
  const ParamCounts c = count_params(m);
  EXPECT_EQ(c.total(), 36 * 177'223'680LL + 2LL * 151'680 * 4'096 + 4'096);
  EXPECT_EQ(c.total(), 7'622'619'136LL);
  EXPECT_EQ(c.mtp, 210'790'400LL);
  EXPECT_EQ(c.stored(), 7'833'409'536LL);
  // verl's registry and mbridge both build it (MiMoForCausalLM, @register_model("mimo")).
  EXPECT_TRUE(verl_megatron_supports(m, true, true).ok);
}

// DeepSeek-V2-Lite (DeepseekV2ForCausalLM): h 2048, 27 layers (1 dense), 16 heads, q_lora_rank
// absent in the published file (DeepseekV2Config's default would be 1536: here null, as the
// model has a plain q_proj), kv_lora 512, 64 experts of 1408 top-6, 2 shared, V 102400.
//   MLA: q_proj 2048 x 16 x 192 = 6,291,456 + kv_a 2048 x 576 = 1,179,648 + 512 + kv_b 512 x 16
//     x 256 = 2,097,152 + o 16 x 128 x 2048 = 4,194,304 -> 13,763,072.
//   Dense layer: + 3 x 2048 x 10944 = 67,239,936 + 4,096 = 81,007,104.
//   MoE layer: + router 131,072 (greedy: no score-correction bias) + 64 x 8,650,752 =
//     553,648,128 + shared 3 x 2048 x 2816 = 17,301,504 + 4,096 = 584,847,872.
//   Total: 81,007,104 + 26 x 584,847,872 + 2 x 102400 x 2048 + 2,048 = 15,706,484,224 ("15.7B";
//     DeepSeek's README rounds to 16B). Less embed_tokens and lm_head 419,430,400:
//     15,287,053,824, and active less them 2,241,719,808, as Moonlight's README gives for
//     DSV2-Lite ("15.29B", "2.24B", counts "exclude the embedding parameters").
// Moonlight-16B-A3B (DeepseekV3ForCausalLM, q_lora_rank null): the same with V 163840,
// intermediate 11264 and the noaux_tc router's 64 biases: 82,973,184 + 26 x 584,847,936 + 2 x
// 163840 x 2048 + 2,048 = 15,960,110,208; without embedding and lm_head 15,289,021,568 (README
// "15.29B"), active without them 2,243,687,552 ("2.24B").
TEST(HfConfigFamilies, DeepseekV2LiteAndMoonlight) {
  const std::string lite = R"({"architectures": ["DeepseekV2ForCausalLM"], "hidden_size": 2048,
    "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 10944, "vocab_size": 102400, "attention_bias": false,
    "n_routed_experts": 64, "num_experts_per_tok": 6, "moe_intermediate_size": 1408,
    "n_shared_experts": 2, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "norm_topk_prob": false, "q_lora_rank": null, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "hidden_act": "silu", "topk_method": "greedy"})";
  const ModelSpec m = parse(lite);
  EXPECT_EQ(m.mla.q_lora_rank, 0);
  EXPECT_EQ(attention_params_per_layer(m), 13'763'072);
  const ParamCounts c = count_params(m);
  EXPECT_EQ(c.total(), 81'007'104LL + 26 * 584'847'872LL + 2LL * 102'400 * 2'048 + 2'048);
  EXPECT_EQ(c.total(), 15'706'484'224LL);
  expect_near_published(c.total(), 15.7e9);
  EXPECT_EQ(c.total() - c.embedding - c.lm_head, 15'287'053'824LL);
  EXPECT_EQ(c.active(m) - c.embedding - c.lm_head, 2'241'719'808LL);
  expect_near_published(c.total() - c.embedding - c.lm_head, 15.29e9);
  expect_near_published(c.active(m) - c.embedding - c.lm_head, 2.24e9);

  const ModelSpec moon = parse(R"({"architectures": ["DeepseekV3ForCausalLM"],
    "attention_bias": false, "first_k_dense_replace": 1, "hidden_size": 2048,
    "intermediate_size": 11264, "kv_lora_rank": 512, "moe_intermediate_size": 1408,
    "moe_layer_freq": 1, "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": true,
    "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27,
    "num_key_value_heads": 16, "num_nextn_predict_layers": 0, "q_lora_rank": null,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "tie_word_embeddings": false, "vocab_size": 163840, "hidden_act": "silu"})");
  const ParamCounts mc = count_params(moon);
  EXPECT_EQ(mc.total(), 15'960'110'208LL);
  EXPECT_EQ(mc.total() - mc.embedding - mc.lm_head, 15'289'021'568LL);
  EXPECT_EQ(mc.active(moon) - mc.embedding - mc.lm_head, 2'243'687'552LL);
}

// Qwen1.5-MoE-A2.7B (Qwen2MoeForCausalLM): h 2048, 24 layers all MoE, 16 heads (MHA), q/k/v
// bias, 60 experts of 1408 top-4, a shared expert of 5632 with its gate, V 151936.
//   Layer: attention 4 x 2048^2 + bias 3 x 2048 = 16,783,360 + router 2048 x 60 = 122,880 +
//     experts 60 x 3 x 2048 x 1408 = 519,045,120 + shared 3 x 2048 x 5632 = 34,603,008 +
//     shared_expert_gate 2,048 + norms 4,096 = 570,560,512.
//   Total: 24 x 570,560,512 + 2 x 151936 x 2048 + 2,048 = 14,315,784,192 (published 14.316B).
// Qwen2-57B-A14B: h 3584, 28 layers, 28 heads / 4 KV, 64 experts of 2560 top-8, shared 20480.
//   Layer: q, o 2 x 3584^2 + k, v 2 x 3584 x 512 + bias 3584 + 1024 = 29,364,736 + router
//     229,376 + experts 64 x 27,525,120 = 1,761,607,680 + shared 220,200,960 + gate 3,584 +
//     norms 7,168 = 2,011,413,504; x 28 + 2 x 151936 x 3584 + 3584 = 57,408,658,944 (57.409B).
TEST(HfConfigFamilies, Qwen2Moe) {
  const ModelSpec m = parse(R"({"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 2048,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 5632, "vocab_size": 151936, "tie_word_embeddings": false,
    "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1, "norm_topk_prob": false,
    "sliding_window": 32768, "hidden_act": "silu", "use_sliding_window": false,
    "max_window_layers": 21})");
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_TRUE(m.shared_expert_gate);
  EXPECT_EQ(m.sliding_window_layers, 0);
  const ParamCounts c = count_params(m);
  EXPECT_EQ(c.total(), 24 * 570'560'512LL + 2LL * 151'936 * 2'048 + 2'048);
  expect_near_published(c.total(), 14.316e9);
  const ModelSpec q57 = parse(R"({"architectures": ["Qwen2MoeForCausalLM"],
    "decoder_sparse_step": 1, "hidden_size": 3584, "intermediate_size": 18944,
    "mlp_only_layers": [], "moe_intermediate_size": 2560, "norm_topk_prob": false,
    "num_attention_heads": 28, "num_experts": 64, "num_experts_per_tok": 8,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "shared_expert_intermediate_size": 20480,
    "tie_word_embeddings": false, "vocab_size": 151936, "hidden_act": "silu"})");
  EXPECT_EQ(count_params(q57).total(), 57'408'658'944LL);
  expect_near_published(count_params(q57).total(), 57.409e9);
}

// GLM-4.5 (zai-org, Glm4MoeForCausalLM): h 5120, 92 layers (3 dense), 96 heads x 128 / 8 KV,
// q/k/v bias, q/k norms, 160 experts of 1536 top-8, one shared, V 151552, 1 MTP layer.
//   Attention: q 5120 x 12288 = 62,914,560 + k, v 2 x 5120 x 1024 = 10,485,760 + o 62,914,560 +
//     bias 12288 + 2048 + q/k norms 256 = 136,329,472.
//   Dense layer: + 3 x 5120 x 12288 = 188,743,680 + norms 10,240 = 325,083,392.
//   MoE layer: + router 160 x 5120 + 160 = 819,360 + experts 160 x 23,592,960 = 3,774,873,600 +
//     shared 23,592,960 + norms 10,240 = 3,935,625,632.
//   Total: 3 x 325,083,392 + 89 x 3,935,625,632 + 2 x 151552 x 5120 + 5,120 = 352,797,829,024.
//   MTP: 3,935,625,632 + eh_proj 52,428,800 + 3 norms 15,360 + embed and head 1,551,892,480 =
//     5,539,962,272; stored 358,337,791,296. Published "355 billion total": 0.6 % above the
//     model without MTP, 0.9 % below it with; the README does not say which it counts.
// GLM-4.5-Air: h 4096, 46 layers (1 dense), 128 experts of 1408, no q/k norms.
//   Attention 50,331,648 x 2 + 8,388,608 + 14,336 = 109,066,240; dense layer + 134,479,872 +
//   8,192 = 243,554,304; MoE layer + 524,416 + 2,214,592,512 + 17,301,504 + 8,192 =
//   2,341,492,864. Total 243,554,304 + 45 x 2,341,492,864 + 2 x 151552 x 4096 + 4,096 =
//   106,852,251,264 (published "106 billion": 0.8 % below, a truncated figure).
TEST(HfConfigFamilies, Glm45AndAir) {
  const std::string glm = R"({"architectures": ["Glm4MoeForCausalLM"], "attention_bias": true,
    "head_dim": 128, "hidden_size": 5120, "partial_rotary_factor": 0.5,
    "intermediate_size": 12288, "moe_intermediate_size": 1536, "norm_topk_prob": true,
    "num_attention_heads": 96, "n_routed_experts": 160, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "num_hidden_layers": 92,
    "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "tie_word_embeddings": false,
    "use_qk_norm": true, "vocab_size": 151552, "hidden_act": "silu"})";
  const ModelSpec m = parse(glm);
  EXPECT_EQ(attention_params_per_layer(m), 136'329'472);
  const ParamCounts c = count_params(m);
  EXPECT_EQ(c.total(), 3 * 325'083'392LL + 89 * 3'935'625'632LL + 2LL * 151'552 * 5'120 + 5'120);
  EXPECT_EQ(c.mtp, 5'539'962'272LL);
  expect_near_published(c.total(), 355e9, 0.01);
  const ModelSpec air = parse(R"({"architectures": ["Glm4MoeForCausalLM"], "attention_bias": true,
    "head_dim": 128, "hidden_size": 4096, "partial_rotary_factor": 0.5,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "norm_topk_prob": true,
    "num_attention_heads": 96, "n_routed_experts": 128, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "first_k_dense_replace": 1, "num_hidden_layers": 46,
    "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "tie_word_embeddings": false,
    "use_qk_norm": false, "vocab_size": 151552, "hidden_act": "silu"})");
  EXPECT_EQ(count_params(air).total(),
            243'554'304LL + 45 * 2'341'492'864LL + 2LL * 151'552 * 4'096 + 4'096);
  expect_near_published(count_params(air).total(), 106e9, 0.01);
}

// gpt-oss-120b (GptOssForCausalLM): h 2880, 36 layers, 64 heads x 64 / 8 KV, biases on q, k, v,
// o and 64 sinks per layer; 128 experts of 2880 top-4 with biases, router with bias; V 201088.
//   Attention: q 2880 x 4096 + 4096 + k, v 2 x (2880 x 512 + 512) + o 4096 x 2880 + 2880 + 64
//     = 26,550,144.
//   MoE: router 2880 x 128 + 128 = 368,768 + experts 128 x (3 x 2880^2 + 2 x 2880 + 2880) =
//     3,186,155,520; norms 5,760. Layer 3,213,080,192.
//   Total: 36 x 3,213,080,192 + 2 x 201088 x 2880 + 2,880 = 116,829,156,672 (published 117B);
//   active less the embedding: 5,132,849,472 (published 5.1B active).
// gpt-oss-20b: 24 layers, 32 experts: (26,550,144 + 92,192 + 32 x 24,891,840 + 5,760) x 24 +
//   1,158,266,880 + 2,880 = 20,914,757,184 (published 21B; 3.6B active: 3,608,307,264).
TEST(HfConfigFamilies, GptOss) {
  const std::string types = R"("sliding_attention", "full_attention", )";
  std::string layer_types;
  for (int i = 0; i < 18; ++i) layer_types += types;
  layer_types.resize(layer_types.size() - 2);
  const auto config = [&](int layers, int experts, const std::string& lt) {
    return R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 2880,
      "num_hidden_layers": )" +
           std::to_string(layers) + R"(, "num_attention_heads": 64, "num_key_value_heads": 8,
      "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088,
      "tie_word_embeddings": false, "attention_bias": true, "num_local_experts": )" +
           std::to_string(experts) + R"(, "num_experts_per_tok": 4, "experts_per_token": 4,
      "sliding_window": 128, "hidden_act": "silu", "swiglu_limit": 7.0,
      "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
      "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false})" +
           (lt.empty() ? "" : ", \"layer_types\": [" + lt + "]") + "}";
  };
  const ModelSpec big = parse(config(36, 128, layer_types));
  EXPECT_EQ(attention_params_per_layer(big), 26'550'144);
  EXPECT_EQ(big.sliding_window, 128);
  EXPECT_EQ(big.sliding_window_layers, 18);
  const ParamCounts c = count_params(big);
  EXPECT_EQ(c.total(), 36 * 3'213'080'192LL + 2LL * 201'088 * 2'880 + 2'880);
  expect_near_published(c.total(), 116.8e9);
  EXPECT_EQ(c.active(big) - c.embedding, 5'132'849'472LL);
  // Without layer_types GptOssConfig alternates from a sliding first layer: 12 of 24.
  const ModelSpec small = parse(config(24, 32, ""));
  EXPECT_EQ(small.sliding_window_layers, 12);
  const ParamCounts s = count_params(small);
  EXPECT_EQ(s.total(), 20'914'757'184LL);
  expect_near_published(s.total(), 20.9e9);
  EXPECT_EQ(s.active(small) - s.embedding, 3'608'307'264LL);
}

// Gemma-2-9B (Gemma2ForCausalLM): h 3584, 42 layers, 16 heads x 256 / 8 KV, GeGLU 14336,
// V 256000 tied, 4 norms per layer.
//   Layer: q, o 2 x 3584 x 4096 + k, v 2 x 3584 x 2048 = 44,040,192 + MLP 3 x 3584 x 14336 =
//     154,140,672 + norms 4 x 3584 = 14,336 -> 198,195,200.
//   Total: 42 x 198,195,200 + 256000 x 3584 + 3,584 = 9,241,705,984 (published 9.242B).
// Gemma-2-27B: h 4608, 46 layers, 32 heads x 128 / 16 KV, 36864: layer 56,623,104 +
//   509,607,936 + 18,432 = 566,249,472; x 46 + 256000 x 4608 + 4608 = 27,227,128,320 (27.227B).
// Gemma-3-1B (Gemma3ForCausalLM): h 1152, 26 layers, 4 heads x 256 / 1 KV, q/k norms, 6912,
//   V 262144: layer 1152 x 1024 x 2 + 1152 x 256 x 2 + 512 + 3 x 1152 x 6912 + 4 x 1152 =
//   26,842,112; x 26 + 262144 x 1152 + 1152 = 999,885,952.
TEST(HfConfigFamilies, Gemma2AndGemma3Text) {
  const ModelSpec g9 = parse(R"({"architectures": ["Gemma2ForCausalLM"], "hidden_size": 3584,
    "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 256, "intermediate_size": 14336, "vocab_size": 256000, "attention_bias": false,
    "sliding_window": 4096, "query_pre_attn_scalar": 256, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": 30.0,
    "attn_logit_softcapping": 50.0})");
  EXPECT_TRUE(g9.tied_embeddings);
  EXPECT_EQ(g9.norms_per_layer, 4);
  EXPECT_EQ(g9.sliding_window_layers, 21);
  EXPECT_EQ(count_params(g9).total(), 42 * 198'195'200LL + 256'000LL * 3'584 + 3'584);
  expect_near_published(count_params(g9).total(), 9.242e9);
  const ModelSpec g27 = parse(R"({"architectures": ["Gemma2ForCausalLM"], "hidden_size": 4608,
    "num_hidden_layers": 46, "num_attention_heads": 32, "num_key_value_heads": 16,
    "head_dim": 128, "intermediate_size": 36864, "vocab_size": 256000,
    "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4096})");
  EXPECT_EQ(count_params(g27).total(), 27'227'128'320LL);
  expect_near_published(count_params(g27).total(), 27.227e9);
  const ModelSpec g1 = parse(R"({"architectures": ["Gemma3ForCausalLM"], "hidden_size": 1152,
    "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
    "head_dim": 256, "intermediate_size": 6912, "vocab_size": 262144, "sliding_window": 512,
    "sliding_window_pattern": 6, "hidden_activation": "gelu_pytorch_tanh"})");
  EXPECT_TRUE(g1.qk_norm);
  EXPECT_EQ(g1.sliding_window_layers, 26 - 4);  // layers 5, 11, 17, 23 attend fully
  EXPECT_EQ(count_params(g1).total(), 999'885'952LL);
}

// Gemma-3-27B-it (Gemma3ForConditionalGeneration; its config.json leaves most text keys to
// Gemma3TextConfig: V 262208, tied, 4 norms, q/k norms): text h 5376, 62 layers, 32 heads x 128
// / 16 KV, 21504: layer q, o 2 x 5376 x 4096 + k, v 2 x 5376 x 2048 + 256 = 66,060,544 + MLP
// 346,816,512 + norms 21,504 = 412,898,560; x 62 + 262208 x 5376 + 5,376 = 27,009,346,304.
// SigLIP (27 layers of 1152, 4304, patch 14 at 896 px): patch_embedding 3 x 14 x 14 x 1152 +
// 1152 = 678,528 + position_embedding 64^2 x 1152 = 4,718,592 + 27 x (4 x 1152 + 4 x (1152^2 +
// 1152) + 2 x 1152 x 4304 + 4304 + 1152 = 15,239,504) + post_layernorm 2,304 = 416,866,032;
// projector 1152 x 5376 + 1152 = 6,194,304. Total 27,432,406,640 (Hugging Face: 27.4B).
// Gemma-3-4B-it (heads, KV heads, head_dim from the defaults: 8, 4, 256): text h 2560, 34
// layers, 10240: 94,382,592 x 34 + 262208 x 2560 + 2,560 = 3,880,263,168; vision 416,866,032 +
// 1152 x 2560 + 1152 = 419,816,304; total 4,300,079,472.
TEST(HfConfigFamilies, Gemma3WithItsVisionTower) {
  const std::string siglip = R"("vision_config": {"hidden_size": 1152, "image_size": 896,
    "intermediate_size": 4304, "model_type": "siglip_vision_model", "num_attention_heads": 16,
    "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false})";
  const ModelSpec g27 = parse(R"({"architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
    "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
    "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}, )" +
                              siglip + R"(, "mm_tokens_per_image": 256})");
  EXPECT_EQ(g27.vision.params, 416'866'032 + 6'194'304);
  EXPECT_EQ(count_params(g27).total() - g27.vision.params, 27'009'346'304LL);
  EXPECT_EQ(count_params(g27).total(), 27'432'406'640LL);
  expect_near_published(count_params(g27).total(), 27.4e9);
  EXPECT_TRUE(g27.tied_embeddings);
  EXPECT_EQ(g27.rope_scaling, "linear");
  EXPECT_EQ(g27.sliding_window_layers, 62 - 10);
  const ModelSpec g4 = parse(R"({"architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
    "model_type": "gemma3_text", "num_hidden_layers": 34,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}, )" +
                             siglip + "}");
  EXPECT_EQ(g4.vision.params, 419'816'304);
  EXPECT_EQ(count_params(g4).total(), 4'300'079'472LL);
}

// Phi-3-mini-4k (Phi3ForCausalLM; fused qkv_proj and gate_up_proj hold the same weights): h 3072,
//   32 layers, 32 heads (MHA), 8192, V 32064: layer 4 x 3072^2 + 3 x 3072 x 8192 + 6,144 =
//   113,252,352; x 32 + 2 x 32064 x 3072 + 3,072 = 3,821,079,552 (published 3.821B).
// Phi-4: h 5120, 40 layers, 40 heads / 10 KV, 17920, V 100352: layer 65,536,000 + 275,251,200 +
//   10,240 = 340,797,440; x 40 + 2 x 100352 x 5120 + 5,120 = 14,659,507,200 (published 14.66B).
TEST(HfConfigFamilies, Phi3AndPhi4) {
  const ModelSpec mini = parse(R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "intermediate_size": 8192, "vocab_size": 32064, "tie_word_embeddings": false,
    "sliding_window": 2047, "hidden_act": "silu"})");
  EXPECT_EQ(count_params(mini).total(), 3'821'079'552LL);
  expect_near_published(count_params(mini).total(), 3.821e9);
  EXPECT_EQ(mini.sliding_window_layers, 32);
  const ModelSpec phi4 = parse(R"({"architectures": ["Phi3ForCausalLM"], "attention_bias": false,
    "hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 40,
    "num_key_value_heads": 10, "intermediate_size": 17920, "vocab_size": 100352,
    "tie_word_embeddings": false, "sliding_window": null, "hidden_act": "silu"})");
  EXPECT_EQ(count_params(phi4).total(), 14'659'507'200LL);
  expect_near_published(count_params(phi4).total(), 14.66e9);
  EXPECT_EQ(phi4.sliding_window_layers, 0);
  // Phi-3-mini-128k: the same weights, rope_scaling longrope recorded.
  const ModelSpec long_ctx = parse(R"({"architectures": ["Phi3ForCausalLM"],
    "rope_scaling": {"type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}})");
  EXPECT_EQ(long_ctx.rope_scaling, "longrope");
  EXPECT_EQ(count_params(long_ctx).total(), 3'821'079'552LL);  // Phi3Config's defaults: mini
}

// OLMoE-1B-7B (OlmoeForCausalLM): h 2048, 16 layers, 16 heads, q/k norms over the whole 2048,
// 64 experts of 1024 top-8, V 50304.
//   Layer: 4 x 2048^2 + norms 2 x 2048 = 16,781,312 + router 131,072 + experts 64 x 3 x 2048 x
//     1024 = 402,653,184 + norms 4,096 = 419,569,664; x 16 + 2 x 50304 x 2048 + 2,048 =
//     6,919,161,856 (published 6.9B); active 1,282,017,280 (1.3B).
// OLMo-2-7B (Olmo2ForCausalLM): h 4096, 32 layers, 11008, V 100352: layer 4 x 4096^2 + 2 x 4096
//   + 3 x 4096 x 11008 + 8,192 = 202,391,552; x 32 + 2 x 100352 x 4096 + 4,096 = 7,298,617,344.
TEST(HfConfigFamilies, OlmoeAndOlmo2) {
  const ModelSpec moe = parse(R"({"architectures": ["OlmoeForCausalLM"], "attention_bias": false,
    "clip_qkv": null, "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
    "num_key_value_heads": 16, "intermediate_size": 1024, "num_experts": 64,
    "num_experts_per_tok": 8, "norm_topk_prob": false, "vocab_size": 50304,
    "tie_word_embeddings": false, "hidden_act": "silu"})");
  EXPECT_EQ(attention_params_per_layer(moe), 16'781'312);
  const ParamCounts c = count_params(moe);
  EXPECT_EQ(c.total(), 16 * 419'569'664LL + 2LL * 50'304 * 2'048 + 2'048);
  expect_near_published(c.total(), 6.92e9);
  EXPECT_EQ(c.active(moe), 1'282'017'280LL);
  const ModelSpec olmo2 = parse(R"({"architectures": ["Olmo2ForCausalLM"], "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "intermediate_size": 11008, "vocab_size": 100352, "tie_word_embeddings": false,
    "hidden_act": "silu"})");
  EXPECT_EQ(count_params(olmo2).total(), 7'298'617'344LL);
}

// Qwen2.5-VL-7B-Instruct (Qwen2_5_VLForConditionalGeneration, text keys at the top level): the
// text decoder is Qwen2.5-7B's with V 152064 (7,615,616,512); the vision tower, as derived in
// profiles/models/qwen2.5-vl-7b.toml: patch_embed 3 x 2 x 14 x 14 x 1280 = 1,505,280 + 32 blocks
// x 19,702,200 + merger 44,574,464 = 676,550,144; total 8,292,166,656, the shipped profile's
// published total (safetensors index total_size / 2). The published file's vision_config lists
// only some keys (hidden_size 1280, in_chans, spatial_patch_size); Qwen2_5_VLVisionConfig's
// defaults give the rest (depth 32, intermediate_size 3420, num_heads 16, out_hidden_size 3584).
// Qwen3-VL-235B-A22B-Instruct (Qwen3VLMoeForConditionalGeneration, text_config): as derived in
// profiles/models/qwen3-vl-235b-moe.toml, vision 576,388,336 (patch_embed with bias 1,770,624,
// pos_embed 2304 x 1152, 27 blocks x 15,239,504, merger 40,119,040, 3 deepstack mergers x
// 40,125,952), total 235,670,022,896.
// Qwen3-VL-8B-Instruct (Qwen3VLForConditionalGeneration): text 36 x (41,943,296 + 150,994,944 +
// 8,192) + 2 x 151936 x 4096 + 4,096 = 8,190,735,360 and the same tower, 576,388,336: 8.767B,
// as its deployment page gives ("8.767B = 8.191B LM + 576.4M ViT").
TEST(HfConfigFamilies, QwenVisionLanguage) {
  const ModelSpec vl25 = parse(R"({"architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "model_type": "qwen2_5_vl", "hidden_act": "silu", "hidden_size": 3584,
    "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "tie_word_embeddings": false, "vocab_size": 152064,
    "max_position_embeddings": 128000, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "use_sliding_window": false,
    "rope_scaling": {"mrope_section": [16, 24, 24], "rope_type": "default", "type": "default"},
    "vision_config": {"hidden_size": 1280, "in_chans": 3, "model_type": "qwen2_5_vl",
    "spatial_patch_size": 14, "tokens_per_second": 2}})");
  EXPECT_EQ(vl25.vision.params, 676'550'144);
  EXPECT_EQ(vl25.vision.num_layers, 32);
  EXPECT_EQ(vl25.vision.hidden_size, 1280);
  EXPECT_EQ(vl25.vision.patch_size, 14);
  EXPECT_TRUE(vl25.rope_scaling.empty());
  const ModelSpec profile25 = test::model("qwen2.5-vl-7b");
  EXPECT_EQ(count_params(vl25).total(), count_params(profile25).total());
  EXPECT_EQ(count_params(vl25).total(), profile25.published_params);

  const std::string vision3 = R"("vision_config": {"deepstack_visual_indexes": [8, 16, 24],
    "depth": 27, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152, "in_channels": 3,
    "intermediate_size": 4304, "num_heads": 16, "num_position_embeddings": 2304,
    "out_hidden_size": 4096, "patch_size": 16, "spatial_merge_size": 2,
    "temporal_patch_size": 2})";
  const ModelSpec moe = parse(R"({"architectures": ["Qwen3VLMoeForConditionalGeneration"],
    "tie_word_embeddings": false, )" +
                              vision3 + R"(, "text_config": {"hidden_size": 4096,
    "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4,
    "head_dim": 128, "intermediate_size": 12288, "moe_intermediate_size": 1536,
    "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936,
    "attention_bias": false, "rope_theta": 5000000, "rms_norm_eps": 1e-06,
    "max_position_embeddings": 262144, "hidden_act": "silu"}})");
  EXPECT_EQ(moe.vision.params, 576'388'336);
  const ModelSpec profile3 = test::model("qwen3-vl-235b-moe");
  EXPECT_EQ(count_params(moe).total(), profile3.published_params);
  EXPECT_EQ(count_params(moe).total(), count_params(profile3).total());
  EXPECT_EQ(moe.max_position_embeddings, 262144);

  const ModelSpec dense = parse(R"({"architectures": ["Qwen3VLForConditionalGeneration"],
    "tie_word_embeddings": false, )" +
                                vision3 + R"(, "text_config": {"hidden_size": 4096,
    "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
    "attention_bias": false, "hidden_act": "silu"}})");
  EXPECT_TRUE(dense.qk_norm);
  EXPECT_EQ(count_params(dense).total() - dense.vision.params, 8'190'735'360LL);
  EXPECT_EQ(count_params(dense).total(), 8'767'123'696LL);
  expect_near_published(count_params(dense).total(), 8.767e9);
  // A key of text_config is located inside text_config.
  auto bad = model_from_hf_config(
      "{\"architectures\": [\"Qwen3VLForConditionalGeneration\"],\n\"vision_config\": "
      "{\"hidden_size\": 64},\n\"text_config\": {\n\"hidden_size\": \"x\"}}",
      "m/config.json", "m");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where.line, 4u) << bad.error().str();
}

// One line, the key named, at the key's line in the file.
void expect_refused(const std::string& text, const std::string& what, std::uint32_t line) {
  auto m = model_from_hf_config(text, "m/config.json", "m");
  ASSERT_FALSE(m.ok()) << text;
  const std::string msg = m.error().str();
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
  EXPECT_EQ(m.error().where.line, line) << msg;
  EXPECT_EQ(msg.rfind("m/config.json:", 0), 0u) << msg;
}

TEST(HfConfigFamilies, RefusesWhatItCannotCountExactly) {
  for (const char* name : {"Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration",
                           "NemotronHForCausalLM", "DeciLMForCausalLM"}) {
    expect_refused(std::string("{\n  \"architectures\": [\"") + name + "\"]}", name, 2);
  }
  expect_refused("{\"architectures\": [\"Qwen3NextForCausalLM\"]}", "hybrid linear attention", 1);
  expect_refused("{\"architectures\": [\"DeciLMForCausalLM\"]}", "block_configs", 1);
  expect_refused(
      "{\"architectures\": [\"Gemma3ForConditionalGeneration\"],\n\"vision_config\": {}}",
      "vision_use_head", 0);
  const std::string v3 = "{\"architectures\": [\"DeepseekV3ForCausalLM\"],\n";
  expect_refused(v3 + "\"moe_layer_freq\": 2}", "moe_layer_freq", 2);
  expect_refused(v3 + "\"n_routed_experts\": 4}", "num_experts_per_tok", 0);
  expect_refused("{\"architectures\": [\"DeepseekV2ForCausalLM\"]}", "num_experts_per_tok", 0);
  expect_refused("{\"architectures\": [\"Gemma2ForCausalLM\"],\n\"hidden_activation\": \"silu\"}",
                 "hidden_activation", 2);
  expect_refused("{\"architectures\": [\"Glm4MoeForCausalLM\"],\n\"hidden_act\": \"gelu\"}",
                 "hidden_act", 2);
}

// transformers' defaults: DeepseekV3Config is DeepSeek-V3 without MTP; GptOssConfig is
// gpt-oss-120b (layer_types alternating, yarn); Gemma ties the embeddings.
TEST(HfConfigFamilies, AbsentKeysTakeTransformersDefaults) {
  const ModelSpec v3 = parse(R"({"architectures": ["DeepseekV3ForCausalLM"]})");
  EXPECT_EQ(count_params(v3).total(), 671'026'419'200LL);
  EXPECT_EQ(v3.mtp_layers, 0);
  const ModelSpec oss = parse(R"({"architectures": ["GptOssForCausalLM"]})");
  EXPECT_EQ(count_params(oss).total(), 116'829'156'672LL);
  EXPECT_EQ(oss.rope_scaling, "yarn");
  EXPECT_EQ(oss.sliding_window_layers, 18);
  EXPECT_TRUE(parse(R"({"architectures": ["Gemma3ForCausalLM"]})").tied_embeddings);
  // Found by fuzz_hf_config: first_k_dense_replace's default 3 with 2 layers made -1 MoE layers;
  // DeepseekV3DecoderLayer makes both dense.
  const ModelSpec short_v3 =
      parse(R"({"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 2})");
  EXPECT_EQ(short_v3.first_k_dense_layers, 2);
  EXPECT_EQ(short_v3.moe_layers(), 0);
  EXPECT_EQ(count_params(short_v3).routed_experts, 0);
  EXPECT_EQ(count_params(short_v3).total(), 2 * 583'483'392LL + 2 * 926'679'040LL + 7'168);
  // GQA families keep today's widths: v and o as k and q, the KV cache 2 x heads / TP x head_dim.
  const ModelSpec q = parse(R"({"architectures": ["Qwen3ForCausalLM"], "num_key_value_heads": 8})");
  EXPECT_EQ(q.v_width(), q.kv_width());
  EXPECT_EQ(q.o_width(), q.q_width());
  EXPECT_EQ(q.kv_cache_width(1), 2 * 8 * 128);
  EXPECT_EQ(q.kv_cache_width(16), 2 * 1 * 128);
}

}  // namespace
}  // namespace grpo::core
