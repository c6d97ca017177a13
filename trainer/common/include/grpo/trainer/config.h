// grpo-trainer's settings, named as in verl where the concept matches
// (actor_rollout_ref.rollout.n, actor_rollout_ref.actor.clip_ratio, ...). Read from a TOML file
// (nested tables or dotted keys) and `key=value` overrides, in that order. Every key, its type,
// default and meaning: docs/trainer-config.md (a test checks that every key is documented).
// LibTorch-free.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::trainer {

// trainer.save_freq = "auto": the Young-Daly interval (core/checkpoint_interval.h).
inline constexpr std::int64_t kSaveFreqAuto = -2;

struct TrainerConfig {
  // data
  std::string task = "addition";
  std::int64_t task_min_len = 1;
  std::int64_t task_max_len = 2;
  std::int64_t train_size = 4096;
  std::int64_t val_size = 256;
  std::int64_t data_seed = 1;
  std::int64_t train_batch_size = 32;  // prompts per step, all ranks together
  std::int64_t max_prompt_length = 16;
  std::int64_t max_response_length = 8;
  // verl-format datasets (docs/datasets.md): set train_files to train on them instead of `task`
  std::vector<std::string> train_files;
  std::vector<std::string> val_files;
  std::string prompt_key = "prompt";
  std::string truncation = "error";  // error | left | right | middle
  bool filter_overlong_prompts = false;
  bool shuffle = true;

  // actor_rollout_ref.model
  std::string model_path;  // a model name (profiles/models/NAME.toml) or a spec file

  // actor_rollout_ref.rollout
  std::int64_t rollout_n = 8;
  double temperature = 1.0;
  double top_p = 1.0;
  std::int64_t top_k = -1;  // -1: off
  bool use_kv_cache = true;
  // The most sequences generated at once (vLLM's max_num_seqs): larger rollouts and validations
  // run in batches of this many, one after the other.
  std::int64_t max_num_seqs = 256;
  bool val_do_sample = false;

  // actor_rollout_ref.actor
  std::int64_t ppo_mini_batch_size = 32;           // prompts, all ranks together
  std::int64_t ppo_micro_batch_size_per_gpu = 32;  // samples per forward/backward on a rank
  std::int64_t ppo_epochs = 2;
  double clip_ratio = 0.2;
  std::optional<double> clip_ratio_low;   // default: clip_ratio
  std::optional<double> clip_ratio_high;  // default: clip_ratio
  double clip_ratio_c = 3.0;
  bool use_kl_loss = true;
  std::string kl_loss_type = "low_var_kl";
  double kl_loss_coef = 0.001;
  double entropy_coeff = 0.0;
  std::string loss_agg_mode = "token-mean";
  double grad_clip = 1.0;
  double lr = 3e-5;
  double weight_decay = 0.01;
  std::vector<double> betas = {0.9, 0.999};
  std::int64_t lr_warmup_steps = 10;
  double moe_aux_loss_coef = 0.01;

  // actor_rollout_ref.actor.megatron: the plan's layout (docs/parallelism.md); DP is the rest
  std::int64_t tensor_model_parallel_size = 1;
  std::int64_t pipeline_model_parallel_size = 1;
  // Megatron-Core's uneven pipeline split (0: the even split; core::stage_layers).
  std::int64_t first_pipeline_stage_layers = 0;
  std::int64_t last_pipeline_stage_layers = 0;
  std::int64_t context_parallel_size = 1;
  std::int64_t expert_model_parallel_size = 1;
  std::int64_t expert_tensor_parallel_size = 1;
  bool sequence_parallel = false;
  // The parameters' dtype: "float32" trains in fp32; "bfloat16" keeps bf16 parameters for the
  // forward and backward with fp32 master weights, gradients and reduction in the optimizer
  // (Megatron's mixed precision; docs/trainer.md). "fp32" / "bf16" are accepted too.
  std::string dtype = "float32";
  // actor_rollout_ref.rollout: the rollout engine's TP. 1 under a TP or EP layout: every rank
  // generates with the whole model, gathered from the shards before each rollout; 0 (the
  // default) or any other value: the rollout runs at the training layout.
  std::int64_t rollout_tensor_model_parallel_size = 0;

  // algorithm
  std::string adv_estimator = "grpo";
  bool norm_adv_by_std_in_grpo = true;

  // trainer
  std::int64_t total_training_steps = 100;  // GRPO steps (after the SFT warm-start)
  std::int64_t sft_warmup_steps = 300;
  std::int64_t sft_batch_size = 64;
  double sft_lr = 1e-3;
  std::int64_t save_freq = 50;  // steps; -1: only on request and at the end; kSaveFreqAuto
  bool async_save = true;       // write checkpoints in a background thread (docs/trainer.md)
  std::int64_t test_freq = 10;  // steps; -1: only at the start of GRPO and at the end
  bool val_before_train = true;
  std::int64_t max_ckpt_to_keep = 3;
  std::int64_t seed = 1;
  std::int64_t threads = 0;  // 0: the cores of the node divided by the ranks on it
  std::string device = "cpu";
  double bucket_mb = 25.0;
  double comm_timeout_s = 300.0;
  double heartbeat_interval_s = 1.0;
  double expert_imbalance_threshold = 3.0;
  std::int64_t checksum_freq = 0;          // weights_sha256 in step events every N steps; 0: never
  bool measure_activation_memory = false;  // peak_activation_bytes in SFT step events
  std::string resume_mode = "auto";        // auto | disable | resume_path
  std::string resume_from_path;
  // verl's trainer.logger: "console" (the stderr log, always written) and "tensorboard" (event
  // files under <run_dir>/tensorboard/ from rank 0, docs/tensorboard.md)
  std::vector<std::string> logger = {"console"};

  // kernels
  std::string kernels = "fused";

  double effective_clip_low() const { return clip_ratio_low.value_or(clip_ratio); }
  double effective_clip_high() const { return clip_ratio_high.value_or(clip_ratio); }
  std::int64_t total_steps() const { return sft_warmup_steps + total_training_steps; }
  bool logs_to_tensorboard() const {
    for (const std::string& l : logger) {
      if (l == "tensorboard") return true;
    }
    return false;
  }
  bool uses_dataset() const { return !train_files.empty(); }
  // bf16 parameters with fp32 master weights (dtype bfloat16).
  bool mixed_precision() const { return dtype == "bfloat16" || dtype == "bf16"; }
};

// One documented key.
struct ConfigKey {
  std::string name;  // "actor_rollout_ref.rollout.n"
  std::string
      type;  // "int", "float", "bool", "string", "float list", "optional float", "string list"
  std::string default_text;  // as it appears in TOML
  std::string doc;           // one line
};
const std::vector<ConfigKey>& config_keys();

// Applies a TOML document's keys over `cfg`. Errors: kParse, kUnknownKey (with did-you-mean),
// kWrongType, kInvalidValue; every message is one line with file:line:col.
core::Status apply_toml(TrainerConfig& cfg, std::string_view text, std::string_view file_name);

// Applies one "key=value" override (the value is parsed for the key's type).
core::Status apply_override(TrainerConfig& cfg, std::string_view key_equals_value);

// Cross-field checks that do not depend on the number of ranks.
core::Status validate(const TrainerConfig& cfg);
// Checks against the data-parallel world: train_batch_size, ppo_mini_batch_size and
// sft_batch_size divisible by world_size, so that a group is never split across ranks.
core::Status validate_for_world(const TrainerConfig& cfg, int world_size);

// The effective configuration as a flat TOML document of dotted keys (every key, sorted).
std::string to_toml(const TrainerConfig& cfg);

}  // namespace grpo::trainer
