// config.json -> ModelSpec (core/hf_config.h): real published config.json files give the same
// spec as the shipped profiles of those models, transformers' defaults fill absent keys, and what
// ModelSpec cannot express is refused with one line naming the key.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "grpo/core/catalog.h"
#include "grpo/core/hf_config.h"
#include "grpo/io/profile_store.h"
#include "test_support.h"

namespace grpo::core {
namespace {
namespace fs = std::filesystem;

// Copies of the config.json files Qwen publishes on Hugging Face, as given at
//   https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json
//   https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json
//   https://huggingface.co/Qwen/Qwen3-32B/blob/main/config.json
//   https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json (the base model's)
// (keys and values as published; taken from a public collection of these files on GitHub, with
// Qwen's key order and formatting).
const char* kQwen3_8B = R"({
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12288,
  "max_position_embeddings": 40960,
  "max_window_layers": 36,
  "model_type": "qwen3",
  "num_attention_heads": 32,
  "num_hidden_layers": 36,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
)";

const char* kQwen3_30B_A3B = R"({
  "architectures": [
    "Qwen3MoeForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "decoder_sparse_step": 1,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 6144,
  "max_position_embeddings": 40960,
  "max_window_layers": 48,
  "mlp_only_layers": [],
  "model_type": "qwen3_moe",
  "moe_intermediate_size": 768,
  "norm_topk_prob": true,
  "num_attention_heads": 32,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 48,
  "num_key_value_heads": 4,
  "output_router_logits": false,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
)";

const char* kQwen3_32B = R"({
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 5120,
  "initializer_range": 0.02,
  "intermediate_size": 25600,
  "max_position_embeddings": 40960,
  "max_window_layers": 64,
  "model_type": "qwen3",
  "num_attention_heads": 64,
  "num_hidden_layers": 64,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
)";

const char* kQwen25_7B = R"({
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 3584,
  "initializer_range": 0.02,
  "intermediate_size": 18944,
  "max_position_embeddings": 131072,
  "max_window_layers": 28,
  "model_type": "qwen2",
  "num_attention_heads": 28,
  "num_hidden_layers": 28,
  "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 131072,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1",
  "use_cache": true,
  "use_mrope": false,
  "use_sliding_window": false,
  "vocab_size": 152064
}
)";

ModelSpec parse_ok(const std::string& text) {
  auto m = model_from_hf_config(text, "dir/config.json", "dir");
  EXPECT_TRUE(m.ok()) << m.error().str();
  return m.ok() ? m.value() : ModelSpec{};
}

// The architecture fields (not name, hf_id, source, published_params) are the same.
void expect_same_architecture(const ModelSpec& a, const ModelSpec& b) {
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_attention_heads, b.num_attention_heads);
  EXPECT_EQ(a.num_kv_heads, b.num_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.ffn_hidden_size, b.ffn_hidden_size);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_DOUBLE_EQ(a.rope_theta, b.rope_theta);
  EXPECT_DOUBLE_EQ(a.rms_norm_eps, b.rms_norm_eps);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.num_experts, b.num_experts);
  EXPECT_EQ(a.experts_per_token, b.experts_per_token);
  EXPECT_EQ(a.moe_ffn_hidden_size, b.moe_ffn_hidden_size);
  EXPECT_EQ(a.num_shared_experts, b.num_shared_experts);
  EXPECT_EQ(a.shared_expert_ffn_hidden_size, b.shared_expert_ffn_hidden_size);
  EXPECT_EQ(a.shared_expert_gate, b.shared_expert_gate);
  EXPECT_EQ(a.norm_topk_prob, b.norm_topk_prob);
  EXPECT_EQ(a.first_k_dense_layers, b.first_k_dense_layers);
  EXPECT_EQ(count_params(a).total(), count_params(b).total());
}

TEST(HfConfig, PublishedConfigsGiveTheShippedProfiles) {
  expect_same_architecture(parse_ok(kQwen3_8B), test::model("qwen3-8b"));
  expect_same_architecture(parse_ok(kQwen3_30B_A3B), test::model("qwen3-30b-moe"));
  expect_same_architecture(parse_ok(kQwen3_32B), test::model("qwen3-32b"));
}

TEST(HfConfig, Qwen25BaseDiffersFromTheInstructProfileOnlyInContextLength) {
  // profiles/models/qwen2.5-7b.toml is Qwen2.5-7B-Instruct (max_position_embeddings 32768, its
  // config.json quoted in the profile); the base model's config says 131072. Everything else,
  // including head_dim = 3584 / 28 = 128 derived and q/k/v bias, is the same.
  ModelSpec base = parse_ok(kQwen25_7B);
  EXPECT_EQ(base.max_position_embeddings, 131072);
  EXPECT_TRUE(base.qkv_bias);
  EXPECT_FALSE(base.qk_norm);
  base.max_position_embeddings = 32768;
  expect_same_architecture(base, test::model("qwen2.5-7b"));
}

TEST(HfConfig, NamesTheSpecAfterTheDirectory) {
  auto m = model_from_hf_config(kQwen3_8B, "/models/Qwen3-8B/config.json", "Qwen3-8B");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->name, "Qwen3-8B");
  EXPECT_EQ(m->source, "/models/Qwen3-8B/config.json");
  EXPECT_EQ(m->published_params, 0);
}

TEST(HfConfig, AbsentKeysTakeTransformersDefaults) {
  // Qwen2Config: num_key_value_heads defaults to num_attention_heads, head_dim is derived,
  // rope_theta 10000, rms_norm_eps 1e-6, max_position_embeddings 32768, untied.
  ModelSpec q2 = parse_ok(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
    "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 96,
    "vocab_size": 100})");
  EXPECT_EQ(q2.num_kv_heads, 4);
  EXPECT_EQ(q2.head_dim, 16);
  EXPECT_DOUBLE_EQ(q2.rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(q2.rms_norm_eps, 1e-6);
  EXPECT_EQ(q2.max_position_embeddings, 32768);
  EXPECT_FALSE(q2.tied_embeddings);
  // Qwen3Config: head_dim defaults to 128 whatever hidden_size / heads is.
  ModelSpec q3 = parse_ok(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64,
    "num_attention_heads": 4, "num_hidden_layers": 2})");
  EXPECT_EQ(q3.head_dim, 128);
  EXPECT_EQ(q3.ffn_hidden_size, 22016);
  EXPECT_EQ(q3.vocab_size, 151936);
  // Qwen3MoeConfig: norm_topk_prob defaults to false, 128 experts top-8 of 768, 4 KV heads.
  ModelSpec moe = parse_ok(R"({"architectures": ["Qwen3MoeForCausalLM"]})");
  EXPECT_FALSE(moe.norm_topk_prob);
  EXPECT_EQ(moe.num_experts, 128);
  EXPECT_EQ(moe.experts_per_token, 8);
  EXPECT_EQ(moe.moe_ffn_hidden_size, 768);
  EXPECT_EQ(moe.num_kv_heads, 4);
  EXPECT_EQ(moe.hidden_size, 2048);
  EXPECT_EQ(moe.head_dim, 2048 / 32);
  EXPECT_EQ(moe.num_layers, 24);
}

TEST(HfConfig, LeadingMlpOnlyLayersAreDenseLayers) {
  ModelSpec m = parse_ok(R"({"architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 6,
    "mlp_only_layers": [1, 0]})");
  EXPECT_EQ(m.first_k_dense_layers, 2);
  EXPECT_EQ(m.moe_layers(), 4);
}

// One line, the key named, at the key's line and column in the file.
void expect_refused(const std::string& text, const std::string& key, ErrorKind kind,
                    std::uint32_t line) {
  auto m = model_from_hf_config(text, "m/config.json", "m");
  ASSERT_FALSE(m.ok()) << text;
  const std::string msg = m.error().str();
  EXPECT_EQ(m.error().kind, kind) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find(key), std::string::npos) << msg;
  EXPECT_EQ(m.error().where.line, line) << msg;
  EXPECT_EQ(msg.rfind("m/config.json:", 0), 0u) << msg;
}

TEST(HfConfig, RefusesWhatModelSpecCannotExpress) {
  const std::string moe = "{\"architectures\": [\"Qwen3MoeForCausalLM\"],\n";
  expect_refused(moe + "\"decoder_sparse_step\": 2}", "decoder_sparse_step",
                 ErrorKind::kInvalidValue, 2);
  expect_refused(moe + "\"mlp_only_layers\": [0, 2]}", "mlp_only_layers", ErrorKind::kInvalidValue,
                 2);
  expect_refused(moe + "\"mlp_only_layers\": [99]}", "mlp_only_layers", ErrorKind::kInvalidValue,
                 2);
  // Found by fuzz_hf_config: the default top-k (8) above num_experts made active > total.
  expect_refused(moe + "\"num_experts\": 6}", "num_experts_per_tok", ErrorKind::kInvalidValue, 0);
  expect_refused("{\"architectures\": [\"MixtralForCausalLM\"],\n\"num_local_experts\": 1}",
                 "num_experts_per_tok", ErrorKind::kInvalidValue, 0);
  const std::string q3 = "{\"architectures\": [\"Qwen3ForCausalLM\"],\n";
  expect_refused(q3 + "\"attention_bias\": true}", "attention_bias", ErrorKind::kInvalidValue, 2);
  expect_refused(q3 + "\"hidden_act\": \"gelu\"}", "hidden_act", ErrorKind::kInvalidValue, 2);
  expect_refused(q3 + "\"hidden_size\": \"big\"}", "hidden_size", ErrorKind::kWrongType, 2);
  expect_refused(q3 + "\"num_attention_heads\": 6, \"num_key_value_heads\": 4}",
                 "num_key_value_heads", ErrorKind::kInvalidValue, 2);
  expect_refused(q3 + "\"vocab_size\": -1}", "vocab_size", ErrorKind::kInvalidValue, 2);
  expect_refused("{\n  \"architectures\": [\"GPT2LMHeadModel\"]}", "GPT2LMHeadModel",
                 ErrorKind::kInvalidValue, 2);
  expect_refused("{\"architectures\": [\"LlamaForCausalLM\"],\n\"mlp_bias\": true}", "mlp_bias",
                 ErrorKind::kInvalidValue, 2);
  expect_refused("{\"model_type\": \"qwen2\"}", "architectures", ErrorKind::kInvalidValue, 0);
}

TEST(HfConfig, DisabledSlidingWindowAndPlainRopeAreAccepted) {
  // Qwen2.5's configs carry sliding_window with use_sliding_window false; a sliding window that
  // starts past the last layer (max_window_layers >= num_hidden_layers) never applies.
  parse_ok(R"({"architectures": ["Qwen2ForCausalLM"], "sliding_window": 4096,
    "use_sliding_window": false, "rope_scaling": null})");
  parse_ok(R"({"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 4,
    "sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 4})");
  ModelSpec m = parse_ok(R"({"architectures": ["Qwen3ForCausalLM"],
    "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0}})");
  EXPECT_DOUBLE_EQ(m.rope_theta, 5e6);
}

TEST(HfConfig, BadJsonIsOneLineWithLineAndColumn) {
  auto m =
      model_from_hf_config("{\n  \"architectures\": [\"Qwen3ForCausalLM\"],,\n}", "c.json", "c");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kParse);
  EXPECT_EQ(m.error().where.line, 2u) << m.error().str();
  EXPECT_EQ(m.error().str().find('\n'), std::string::npos);
  EXPECT_FALSE(model_from_hf_config("[1, 2]", "c.json", "c").ok());
  EXPECT_FALSE(model_from_hf_config("", "c.json", "c").ok());
  // A number no type holds (found by fuzz_hf_config): nlohmann-json throws out_of_range, not
  // parse_error; still one line.
  auto big = model_from_hf_config(R"({"hidden_size": 6666666666666e666666})", "c.json", "c");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().kind, ErrorKind::kParse);
  EXPECT_NE(big.error().str().find("number overflow"), std::string::npos) << big.error().str();
}

// Sizes within each key's bounds whose products pass int64: refused as too large, never shown as a
// wrapped small count (a 1.8e19-parameter model once planned as "5.4B").
TEST(HfConfig, ParameterCountsAtTheLimits) {
  // Dense Qwen3 at h = f = V = 2^18, 2,048 query and KV heads of 128 (q = kv = 2^18), L layers.
  // By hand: per layer q/k/v/o 4 h^2 + q/k norms 2 x 128 + SwiGLU 3 h f + 2 RMSNorms 2 h
  //   = 7 x 2^36 + 524,544; plus embedding and untied head 2 V h = 2^37 and the final norm h.
  //   L = 2,048: 7 x 2^47 + 2^11 x 524,544 + 2^37 + 2^18 = 985,300,931,969,024 (< 2^50: planned);
  //   L = 2,400: 1.15e15 (> 2^50 = 1.126e15: refused).
  const auto config = [](int layers) {
    return R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 262144,
               "intermediate_size": 262144, "vocab_size": 262144, "num_attention_heads": 2048,
               "num_key_value_heads": 2048, "head_dim": 128, "num_hidden_layers": )" +
           std::to_string(layers) + "}";
  };
  auto at = model_from_hf_config(config(2048), "c.json", "c");
  ASSERT_TRUE(at.ok()) << at.error().str();
  EXPECT_EQ(count_params(*at).total(), 985'300'931'969'024);
  auto over = model_from_hf_config(config(2400), "c.json", "c");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().str(),
            "c.json: the model is too large: 1154625907286016 parameters from these sizes (at "
            "most 2^50 = 1,125,899,906,842,624 are planned)");
  // Every size at its bound: the routed experts alone are 4,096 x 65,536 x 3 x 2^48, past int64.
  auto wraps = model_from_hf_config(
      R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 16777216,
          "num_hidden_layers": 4096, "num_experts": 65536, "num_experts_per_tok": 8,
          "moe_intermediate_size": 16777216, "num_attention_heads": 64,
          "num_key_value_heads": 4, "head_dim": 128})",
      "c.json", "c");
  ASSERT_FALSE(wraps.ok());
  EXPECT_NE(wraps.error().str().find("more than 9.2e18 parameters"), std::string::npos)
      << wraps.error().str();
}

// --model DIR: the launcher's search-path provider (and grpo-trainer's, which shares
// io::hf_config_path) reads the directory's config.json through core::load_model.
TEST(HfConfig, LoadModelTakesAHuggingFaceDirectory) {
  const fs::path dir =
      fs::temp_directory_path() / ("grpo-hf-" + std::to_string(::getpid())) / "Qwen3-30B-A3B";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << kQwen3_30B_A3B;
  const io::DirectorySourceProvider provider({});
  for (const std::string& name : {dir.string(), (dir / "config.json").string()}) {
    auto m = load_model(provider, name);
    ASSERT_TRUE(m.ok()) << m.error().str();
    EXPECT_EQ(m->name, "Qwen3-30B-A3B");
    expect_same_architecture(*m, test::model("qwen3-30b-moe"));
  }
  // A directory without config.json is not a model.
  fs::remove(dir / "config.json");
  EXPECT_FALSE(load_model(provider, dir.string()).ok());
  fs::remove_all(dir.parent_path());
}

// A profile directory's models/<name>/config.json is a model named <name> (listed by names()); a
// models/<name>.toml beside it wins, and a directory earlier in the search path wins over both.
TEST(HfConfig, ProfileDirectoriesHoldHuggingFaceConfigs) {
  const fs::path root = fs::temp_directory_path() / ("grpo-prof-" + std::to_string(::getpid()));
  fs::create_directories(root / "a/models/my-qwen");
  fs::create_directories(root / "b/models/other");
  std::ofstream(root / "a/models/my-qwen/config.json") << kQwen3_30B_A3B;
  std::ofstream(root / "b/models/other/config.json") << kQwen3_8B;
  fs::create_directories(root / "b/models/no-config");
  const io::DirectorySourceProvider provider({root / "a", root / "b"});
  const auto names = provider.names(CatalogKind::kModel);
  EXPECT_EQ(names, (std::vector<std::string>{"my-qwen", "other"}));
  auto m = load_model(provider, "my-qwen");
  ASSERT_TRUE(m.ok()) << m.error().str();
  EXPECT_EQ(m->name, "my-qwen");
  EXPECT_EQ(m->hf_id, "");
  expect_same_architecture(*m, test::model("qwen3-30b-moe"));
  EXPECT_FALSE(load_model(provider, "no-config").ok());
  std::ofstream(root / "b/models/other.toml") << "name = \"other\"\nhidden_size = 64\n";
  EXPECT_EQ(provider.locate(CatalogKind::kModel, "other"), root / "b/models/other.toml");
  fs::remove_all(root);
}

// Rope scaling and sliding windows change no parameter count: the reader records them and
// embedded_trainer_supports refuses them in one line (grpo-trainer has plain RoPE and full
// attention only), a window only when the run's sequences can be longer than it.
TEST(HfConfig, RopeScalingAndSlidingWindowsAreRecordedAndRefusedForTheTrainer) {
  auto yarn = model_from_hf_config(
      R"({"architectures": ["Qwen3ForCausalLM"], "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})",
      "m/config.json", "m");
  ASSERT_TRUE(yarn.ok()) << yarn.error().str();
  EXPECT_EQ(yarn.value().rope_scaling, "yarn");
  const Status refused = embedded_trainer_supports(yarn.value(), 1024);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().str().find("rope scaling 'yarn'"), std::string::npos);
  auto window = model_from_hf_config(
      R"({"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 4, "use_sliding_window": true,
      "sliding_window": 4096, "max_window_layers": 2})",
      "m/config.json", "m");
  ASSERT_TRUE(window.ok()) << window.error().str();
  EXPECT_EQ(window.value().sliding_window, 4096);
  EXPECT_EQ(window.value().sliding_window_layers, 2);  // layers 2 and 3
  // 4096 tokens: the farthest key is 4095 back, inside the window (distance < 4096).
  EXPECT_TRUE(embedded_trainer_supports(window.value(), 4096).ok());
  const Status longer = embedded_trainer_supports(window.value(), 4097);
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.error().str().find("up to 4097 tokens"), std::string::npos);
  for (const char* arch : {"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM"}) {
    auto m = model_from_hf_config(
        std::string(R"({"architectures": [")") + arch + R"("], "sliding_window": null})",
        "m/config.json", "m");
    ASSERT_TRUE(m.ok()) << m.error().str();
    EXPECT_TRUE(embedded_trainer_supports(m.value(), 1024).ok()) << arch;
  }
  ModelSpec other = window.value();
  other.architecture = "DeepseekV3ForCausalLM";
  const Status not_trained = embedded_trainer_supports(other, 1024);
  ASSERT_FALSE(not_trained.ok());
  EXPECT_NE(not_trained.error().str().find("does not train DeepseekV3ForCausalLM"),
            std::string::npos);
  EXPECT_EQ(not_trained.error().str().find('\n'), std::string::npos);
}

// Parameter totals derived by hand from each published config.json (values below), checked in the
// #32 notes against model.safetensors.index.json total_size / 2 still to be recorded per row:
//   Llama-3.1-8B: layer = q 4096^2 + k,v 2 x 4096 x 1024 + o 4096^2 (41,943,040) + MLP 3 x 4096 x
//     14336 (176,160,768) + 2 norms (8,192) = 218,112,000; x 32 + 2 x 128256 x 4096 + 4096.
//   Mistral-7B-v0.1: the same layers, vocabulary 32000.
//   Mixtral-8x7B: attention as above + 8 experts x 176,160,768 + router 4096 x 8 + norms.
TEST(HfConfig, LlamaMistralMixtralCountByHand) {
  const auto count = [](const std::string& text) {
    auto m = model_from_hf_config(text, "m/config.json", "m");
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str());
    return m.ok() ? count_params(m.value()).total() : 0;
  };
  const std::string llama8 = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "max_position_embeddings": 131072, "tie_word_embeddings": false})";
  EXPECT_EQ(count(llama8), 218'112'000LL * 32 + 2LL * 128'256 * 4'096 + 4'096);
  EXPECT_EQ(count(llama8), 8'030'261'248LL);
  const std::string mistral = R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "sliding_window": 4096})";
  EXPECT_EQ(count(mistral), 7'241'732'096LL);
  const std::string mixtral = R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
    "num_experts_per_tok": 2, "sliding_window": null})";
  EXPECT_EQ(count(mixtral), (41'943'040LL + 8 * 176'160'768LL + 4'096 * 8 + 8'192) * 32 +
                                2LL * 32'000 * 4'096 + 4'096);
  EXPECT_EQ(count(mixtral), 46'702'792'704LL);
}

}  // namespace
}  // namespace grpo::core
