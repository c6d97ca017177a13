#include "grpo/trainer/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <utility>
#include <variant>

#include "grpo/core/text.h"
#include "grpo/core/toml_reader.h"
#include "grpo/core/verl_keys.h"
#include "grpo/kernels/backend.h"

namespace grpo::trainer {
namespace {

using core::ErrorKind;
using core::make_error;
using core::SourceLocation;
using core::Status;

using Member =
    std::variant<std::int64_t TrainerConfig::*, double TrainerConfig::*, bool TrainerConfig::*,
                 std::string TrainerConfig::*, std::vector<double> TrainerConfig::*,
                 std::optional<double> TrainerConfig::*, std::vector<std::string> TrainerConfig::*>;

// A range or a set of accepted values; checked after parsing.
struct Check {
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  std::vector<std::string> choices;
};

Check at_least(double v) {
  return Check{v, std::nullopt, false, {}};
}
Check positive() {
  return Check{0.0, std::nullopt, true, {}};
}
Check range(double lo, double hi) {
  return Check{lo, hi, false, {}};
}
Check one_of(std::vector<std::string> c) {
  return Check{std::nullopt, std::nullopt, false, c};
}
Check any() {
  return Check{};
}

struct KeyDef {
  std::string name;
  Member member;
  Check check;
  std::string doc;
};

// data.*: the built-in task or the dataset files, the splits, batch and sequence lengths.
std::vector<KeyDef> data_keys() {
  using C = TrainerConfig;
  return {
      {"data.task", &C::task, one_of({"addition", "reverse"}),
       "built-in task: 'addition' (a+b=) or 'reverse' (r:abc=)"},
      {"data.task_min_len", &C::task_min_len, at_least(1),
       "smallest operand size: digits per addend, or letters to reverse"},
      {"data.task_max_len", &C::task_max_len, range(1, 6), "largest operand size"},
      {"data.train_size", &C::train_size, at_least(1), "examples in the train split"},
      {core::verl_key::kValSize, &C::val_size, at_least(1), "examples in the validation split"},
      {"data.seed", &C::data_seed, at_least(0),
       "seed of the generated splits and of the epoch shuffles"},
      {core::verl_key::kTrainBatchSize, &C::train_batch_size, at_least(1),
       "prompts per GRPO step, all ranks together (each gets rollout.n responses)"},
      {core::verl_key::kMaxPromptLength, &C::max_prompt_length, at_least(2),
       "longest prompt in tokens (built-in tasks: including <bos>; datasets: the rendered chat "
       "template, see data.truncation)"},
      {core::verl_key::kMaxResponseLength, &C::max_response_length, at_least(1),
       "most tokens generated per response, including <eos>"},
      {"data.train_files", &C::train_files, any(),
       "verl-format JSONL/JSON files to train on (a path or a list [a, b]); when set, data.task "
       "is not used and the model must be a Hugging Face directory (docs/datasets.md)"},
      {"data.val_files", &C::val_files, any(),
       "validation files (same format); empty: the last data.val_size train records"},
      {"data.prompt_key", &C::prompt_key, any(), "the record field holding the chat messages"},
      {"data.truncation", &C::truncation, one_of({"error", "left", "right", "middle"}),
       "a rendered prompt longer than data.max_prompt_length: error, keep its last (left) or "
       "first (right) tokens, or both ends (middle), as verl"},
      {"data.filter_overlong_prompts", &C::filter_overlong_prompts, any(),
       "drop records whose rendered prompt exceeds data.max_prompt_length (before truncation)"},
      {"data.shuffle", &C::shuffle, any(),
       "visit the train split in a new order every epoch (seeded by data.seed)"},
  };
}

// actor_rollout_ref.model.path and actor_rollout_ref.rollout.*: the model and its sampling.
std::vector<KeyDef> model_rollout_keys() {
  using C = TrainerConfig;
  return {
      {core::verl_key::kModelPath, &C::model_path, any(),
       "model name (profiles/models/NAME.toml), spec file, or Hugging Face model directory "
       "(config.json + safetensors: its weights are loaded, docs/hf-checkpoints.md); --model sets "
       "it"},
      {core::verl_key::kRolloutN, &C::rollout_n, at_least(1),
       "responses sampled per prompt (the group size)"},
      {"actor_rollout_ref.rollout.temperature", &C::temperature, positive(),
       "sampling temperature (also divides the logits in the log-prob computation)"},
      {"actor_rollout_ref.rollout.top_p", &C::top_p, Check{0.0, 1.0, true, {}},
       "nucleus sampling threshold; 1.0 disables it"},
      {"actor_rollout_ref.rollout.top_k", &C::top_k, at_least(-1),
       "sample among the k most likely tokens; -1 disables it"},
      {"actor_rollout_ref.rollout.use_kv_cache", &C::use_kv_cache, any(),
       "decode with the KV cache (false recomputes the whole prefix per token)"},
      {core::verl_key::kRolloutMaxNumSeqs, &C::max_num_seqs, at_least(1),
       "most sequences generated at once: larger rollouts and validations run in batches of this "
       "many"},
      {"actor_rollout_ref.rollout.val_kwargs.do_sample", &C::val_do_sample, any(),
       "validation samples with temperature/top_p instead of greedy decoding"},
  };
}

// actor_rollout_ref.actor.*: batching, the PPO/GRPO loss and the AdamW optimizer.
std::vector<KeyDef> actor_keys() {
  using C = TrainerConfig;
  return {
      {core::verl_key::kMiniBatch, &C::ppo_mini_batch_size, at_least(1),
       "prompts per optimizer step, all ranks together"},
      {core::verl_key::kMicroBatch, &C::ppo_micro_batch_size_per_gpu, at_least(1),
       "samples per forward/backward on one rank (gradient accumulation)"},
      {core::verl_key::kPpoEpochs, &C::ppo_epochs, at_least(1), "passes over each step's batch"},
      {"actor_rollout_ref.actor.clip_ratio", &C::clip_ratio, range(0, 10), "PPO clip range"},
      {"actor_rollout_ref.actor.clip_ratio_low", &C::clip_ratio_low, range(0, 1),
       "lower clip range (ratio >= 1 - low); default clip_ratio"},
      {"actor_rollout_ref.actor.clip_ratio_high", &C::clip_ratio_high, range(0, 10),
       "upper clip range (ratio <= 1 + high); default clip_ratio"},
      {"actor_rollout_ref.actor.clip_ratio_c", &C::clip_ratio_c, Check{1.0, std::nullopt, true, {}},
       "dual-clip bound for negative advantages"},
      {core::verl_key::kUseKlLoss, &C::use_kl_loss, any(),
       "add the KL to the frozen reference policy to the loss"},
      {"actor_rollout_ref.actor.kl_loss_type", &C::kl_loss_type,
       one_of({"low_var_kl", "kl", "abs", "mse"}),
       "KL estimator: low_var_kl (k3, clamped to [-10, 10]), kl (k1), abs, mse (k2)"},
      {"actor_rollout_ref.actor.kl_loss_coef", &C::kl_loss_coef, at_least(0),
       "weight of the KL term"},
      {"actor_rollout_ref.actor.entropy_coeff", &C::entropy_coeff, any(),
       "weight of the entropy bonus (loss -= coeff * entropy)"},
      {"actor_rollout_ref.actor.loss_agg_mode", &C::loss_agg_mode, one_of({"token-mean"}),
       "loss aggregation over a micro batch's response tokens"},
      {"actor_rollout_ref.actor.grad_clip", &C::grad_clip, positive(),
       "clip the global gradient norm to this"},
      {"actor_rollout_ref.actor.optim.lr", &C::lr, positive(), "AdamW learning rate for GRPO"},
      {"actor_rollout_ref.actor.optim.weight_decay", &C::weight_decay, at_least(0),
       "AdamW decoupled weight decay"},
      {"actor_rollout_ref.actor.optim.betas", &C::betas, range(0, 1), "AdamW betas [b1, b2]"},
      {"actor_rollout_ref.actor.optim.lr_warmup_steps", &C::lr_warmup_steps, at_least(0),
       "linear learning-rate warm-up, in optimizer steps of each phase"},
      {"actor_rollout_ref.actor.moe_aux_loss_coef", &C::moe_aux_loss_coef, at_least(0),
       "weight of the MoE load-balancing loss (MoE models only)"},
  };
}

// actor_rollout_ref.actor.megatron.* and the rollout TP: the parallel layout and the dtype.
std::vector<KeyDef> layout_keys() {
  using C = TrainerConfig;
  return {
      {core::verl_key::kTp, &C::tensor_model_parallel_size, at_least(1),
       "tensor-parallel size (TP)"},
      {core::verl_key::kPp, &C::pipeline_model_parallel_size, at_least(1),
       "pipeline-parallel size (PP)"},
      {core::verl_key::kFirstStageLayers, &C::first_pipeline_stage_layers, at_least(0),
       "decoder layers of the first pipeline stage (0: the even split)"},
      {core::verl_key::kLastStageLayers, &C::last_pipeline_stage_layers, at_least(0),
       "decoder layers of the last pipeline stage (0: the even split)"},
      {core::verl_key::kCp, &C::context_parallel_size, at_least(1), "context-parallel size (CP)"},
      {core::verl_key::kEp, &C::expert_model_parallel_size, at_least(1),
       "expert-parallel size (EP): each rank of an EP group holds num_experts / EP experts"},
      {core::verl_key::kEtp, &C::expert_tensor_parallel_size, at_least(1),
       "tensor-parallel size inside an expert (ETP: 1, or TP to split the experts over the TP "
       "group)"},
      {core::verl_key::kSequenceParallel, &C::sequence_parallel, any(),
       "sequence parallelism around the norms (with TP > 1)"},
      {core::verl_key::kMegatronDtype, &C::dtype,
       one_of({"float32", "fp32", "bfloat16", "bf16", "float16", "fp16"}),
       "parameter dtype: float32, or bfloat16 with fp32 master weights and gradients (float16 "
       "is not built)"},
      {core::verl_key::kRolloutTp, &C::rollout_tensor_model_parallel_size, at_least(0),
       "the rollout engine's TP: 1 under a TP or EP layout generates with the whole model on "
       "every rank (gathered from the shards before each rollout); 0 or any other value at the "
       "training layout"},
  };
}

// algorithm.*: the advantage estimator.
std::vector<KeyDef> algorithm_keys() {
  using C = TrainerConfig;
  return {
      {"algorithm.adv_estimator", &C::adv_estimator, one_of({"grpo"}), "advantage estimator"},
      {"algorithm.norm_adv_by_std_in_grpo", &C::norm_adv_by_std_in_grpo, any(),
       "divide the group-centred rewards by the group's std (+1e-6)"},
  };
}

// trainer.*: the steps of each phase, checkpoints, validation and retention.
std::vector<KeyDef> schedule_keys() {
  using C = TrainerConfig;
  return {
      {core::verl_key::kTotalTrainingSteps, &C::total_training_steps, at_least(0),
       "GRPO steps, after the SFT warm-start"},
      {core::verl_key::kSftWarmupSteps, &C::sft_warmup_steps, at_least(0),
       "supervised warm-start steps on the train split before GRPO (0: none)"},
      {core::verl_key::kSftBatchSize, &C::sft_batch_size, at_least(1),
       "examples per SFT step, all ranks together"},
      {"trainer.sft_lr", &C::sft_lr, positive(), "AdamW learning rate of the SFT warm-start"},
      {core::verl_key::kSaveFreq, &C::save_freq, at_least(-1),
       "checkpoint every this many steps (SFT and GRPO steps count alike); -1: never; \"auto\": "
       "the Young-Daly interval from the measured cost and the run's failure rate"},
      {core::verl_key::kAsyncSave, &C::async_save, any(),
       "periodic checkpoints are written by a background thread while training goes on"},
      {"trainer.test_freq", &C::test_freq, at_least(-1),
       "validate every this many steps; -1: only at the start of GRPO and at the end"},
      {"trainer.val_before_train", &C::val_before_train, any(),
       "validate when GRPO starts (after the SFT warm-start)"},
      {"trainer.max_ckpt_to_keep", &C::max_ckpt_to_keep, at_least(1),
       "checkpoints kept; older ones are deleted after a new one is committed"},
  };
}

// trainer.*: seeds, threads, device, communication, diagnostics, resume and logging; and
// kernels.
std::vector<KeyDef> run_keys() {
  using C = TrainerConfig;
  return {
      {"trainer.seed", &C::seed, at_least(0), "seed of the initial weights and of sampling"},
      {"trainer.threads", &C::threads, at_least(0),
       "LibTorch/OpenMP threads per rank; 0: cores of the node / ranks on the node"},
      {core::verl_key::kDevice, &C::device, one_of({"cpu", "cuda"}),
       "cpu, or cuda when built against a CUDA LibTorch"},
      {"trainer.bucket_mb", &C::bucket_mb, positive(), "gradient all-reduce bucket size in MiB"},
      {"trainer.comm_timeout_s", &C::comm_timeout_s, positive(),
       "timeout of rendezvous and collectives"},
      {"trainer.heartbeat_interval_s", &C::heartbeat_interval_s, positive(),
       "most seconds between heartbeats inside a long phase"},
      {"trainer.expert_imbalance_threshold", &C::expert_imbalance_threshold, at_least(1),
       "EXPERT_IMBALANCE when a layer's max/mean tokens per expert exceeds this"},
      {"trainer.checksum_freq", &C::checksum_freq, at_least(0),
       "add weights_sha256 to the step event every this many steps (0: only at checkpoints)"},
      {"trainer.measure_activation_memory", &C::measure_activation_memory, any(),
       "diagnostics: add peak_activation_bytes (CPU allocator bytes over each micro batch's "
       "forward and backward) to SFT step events and peak_rollout_bytes (over the generation) "
       "to GRPO step events; slows allocation"},
      {"trainer.resume_mode", &C::resume_mode, one_of({"auto", "disable", "resume_path"}),
       "auto: newest valid checkpoint in the run dir; disable; resume_path: resume_from_path"},
      {"trainer.resume_from_path", &C::resume_from_path, any(),
       "checkpoint directory for resume_mode = resume_path"},
      {core::verl_key::kLogger, &C::logger, one_of({"console", "tensorboard"}),
       "where metrics go, verl's values: ['console'] (the stderr log, always written), "
       "['console','tensorboard'] (also event files under <run_dir>/tensorboard/)"},
      {"kernels", &C::kernels, one_of({"fused", "reference"}),
       "implementation of the hot ops: fused kernels or the unfused LibTorch reference "
       "(docs/kernels.md)"},
  };
}

// Every key, groups in this order: config_keys() (the trainer's key listing) keeps it.
const std::vector<KeyDef>& key_defs() {
  static const std::vector<KeyDef> defs = [] {
    std::vector<KeyDef> all;
    for (auto* group : {data_keys, model_rollout_keys, actor_keys, layout_keys, algorithm_keys,
                        schedule_keys, run_keys}) {
      std::vector<KeyDef> keys = group();
      all.insert(all.end(), std::make_move_iterator(keys.begin()),
                 std::make_move_iterator(keys.end()));
    }
    return all;
  }();
  return defs;
}

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // Shortest form that reads back exactly.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) {
      s = buf;
      break;
    }
  }
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// For messages: 0.2, 1, 1e-08.
std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// did_you_mean, falling back to a candidate the word is a prefix of ("low_var" -> "low_var_kl").
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  std::string hint = core::did_you_mean(word, candidates);
  if (!hint.empty() || word.empty()) return hint;
  for (const std::string& c : candidates) {
    if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
      return " (did you mean '" + c + "'?)";
    }
  }
  return {};
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string format_value(const TrainerConfig& cfg, const Member& m) {
  return std::visit(
      [&](auto ptr) -> std::string {
        const auto& v = cfg.*ptr;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          if (ptr == &TrainerConfig::save_freq && v == kSaveFreqAuto) return quote("auto");
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return format_double(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote(v);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          std::string s = "[";
          for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + format_double(v[i]);
          return s + "]";
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::string s = "[";
          for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + quote(v[i]);
          return s + "]";
        } else {
          return v ? format_double(*v) : std::string();
        }
      },
      m);
}

std::string type_name(const Member& m) {
  switch (m.index()) {
    case 0:
      return "int";
    case 1:
      return "float";
    case 2:
      return "bool";
    case 3:
      return "string";
    case 4:
      return "float list";
    case 5:
      return "optional float";
    default:
      return "string list";
  }
}

const KeyDef* find_key(std::string_view name) {
  for (const KeyDef& d : key_defs()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

core::Error unknown_key(std::string_view name, SourceLocation where) {
  std::vector<std::string> names;
  for (const KeyDef& d : key_defs()) names.push_back(d.name);
  std::string hint = suggestion(name, names);
  if (hint.empty()) {
    // A key given without its section: "rollout.n" for core::verl_key::kRolloutN.
    for (const std::string& n : names) {
      if (n.size() > name.size() && n.compare(n.size() - name.size(), name.size(), name) == 0 &&
          n[n.size() - name.size() - 1] == '.') {
        hint = " (did you mean '" + n + "'?)";
        break;
      }
    }
  }
  return make_error(ErrorKind::kUnknownKey, "unknown key '" + std::string(name) + "'" + hint,
                    std::move(where));
}

Status check_number(const KeyDef& d, double v, SourceLocation where) {
  const Check& c = d.check;
  const bool low = c.min && (c.min_exclusive ? v <= *c.min : v < *c.min);
  const bool high = c.max && v > *c.max;
  if (std::isnan(v) || low || high) {
    std::string want;
    if (c.min && c.max) {
      want = std::string("in ") + (c.min_exclusive ? "(" : "[") + format_number(*c.min) + ", " +
             format_number(*c.max) + "]";
    } else if (c.min) {
      want = (c.min_exclusive ? "> " : ">= ") + format_number(*c.min);
    }
    return make_error(ErrorKind::kInvalidValue,
                      d.name + ": must be " + want + ", got " + format_number(v), std::move(where));
  }
  return core::ok_status();
}

// A parsed value before it is stored; the member decides which alternative is expected.
using Parsed = std::variant<std::int64_t, double, bool, std::string, std::vector<double>,
                            std::vector<std::string>>;

std::string unquote(std::string s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

// "console,tensorboard" (verl also takes a comma-separated string): the trimmed items.
std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  for (const std::string_view item : core::split(text, ',')) {
    std::string s = unquote(std::string(core::trim(item)));
    if (!s.empty()) out.push_back(std::move(s));
  }
  return out;
}

// A string list's items, each one of the key's choices.
Status check_choices(const KeyDef& d, const std::vector<std::string>& items,
                     const SourceLocation& where) {
  for (const std::string& s : items) {
    if (d.check.choices.empty() ||
        std::find(d.check.choices.begin(), d.check.choices.end(), s) != d.check.choices.end()) {
      continue;
    }
    std::string list;
    for (const auto& c : d.check.choices) list += (list.empty() ? "" : ", ") + c;
    return make_error(
        ErrorKind::kInvalidValue,
        d.name + ": '" + s + "' is not one of: " + list + suggestion(s, d.check.choices), where);
  }
  return core::ok_status();
}

// One string as a string list: a key with fixed choices (trainer.logger) takes verl's
// comma-separated form "console,tensorboard"; any other (file paths, which may hold commas) is
// a list of one, empty for "".
std::vector<std::string> items_of_string(const KeyDef& d, const std::string& s) {
  if (!d.check.choices.empty()) return split_list(s);
  std::string one = unquote(s);
  return one.empty() ? std::vector<std::string>{} : std::vector<std::string>{std::move(one)};
}

Status store(TrainerConfig& cfg, const KeyDef& d, const Parsed& value, SourceLocation where) {
  auto wrong = [&](std::string_view expected) {
    return make_error(ErrorKind::kWrongType, d.name + ": expected " + std::string(expected), where);
  };
  auto as_number = [&](double& out) {
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      out = static_cast<double>(*i);
      return true;
    }
    if (const auto* f = std::get_if<double>(&value)) {
      out = *f;
      return true;
    }
    return false;
  };
  return std::visit(
      [&](auto ptr) -> Status {
        auto& field = cfg.*ptr;
        using T = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          const bool may_be_auto = ptr == &TrainerConfig::save_freq;
          if (const auto* s = std::get_if<std::string>(&value); s != nullptr && may_be_auto) {
            if (*s != "auto") return wrong("an integer or \"auto\"");
            field = kSaveFreqAuto;
            return core::ok_status();
          }
          const auto* i = std::get_if<std::int64_t>(&value);
          if (i == nullptr) return wrong(may_be_auto ? "an integer or \"auto\"" : "an integer");
          GRPO_TRY_STATUS(check_number(d, static_cast<double>(*i), where));
          field = *i;
        } else if constexpr (std::is_same_v<T, double>) {
          double v = 0;
          if (!as_number(v)) return wrong("a number");
          GRPO_TRY_STATUS(check_number(d, v, where));
          field = v;
        } else if constexpr (std::is_same_v<T, std::optional<double>>) {
          double v = 0;
          if (!as_number(v)) return wrong("a number");
          GRPO_TRY_STATUS(check_number(d, v, where));
          field = v;
        } else if constexpr (std::is_same_v<T, bool>) {
          const auto* b = std::get_if<bool>(&value);
          if (b == nullptr) return wrong("true or false");
          field = *b;
        } else if constexpr (std::is_same_v<T, std::string>) {
          const auto* s = std::get_if<std::string>(&value);
          if (s == nullptr) return wrong("a string");
          if (!d.check.choices.empty() && std::find(d.check.choices.begin(), d.check.choices.end(),
                                                    *s) == d.check.choices.end()) {
            std::string list;
            for (const auto& c : d.check.choices) list += (list.empty() ? "" : ", ") + c;
            return make_error(
                ErrorKind::kInvalidValue,
                d.name + ": '" + *s + "' is not one of: " + list + suggestion(*s, d.check.choices),
                where);
          }
          field = *s;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          // A list of strings, or one string (items_of_string).
          std::vector<std::string> items;
          if (const auto* l = std::get_if<std::vector<std::string>>(&value)) {
            items = *l;
          } else if (const auto* s = std::get_if<std::string>(&value)) {
            items = items_of_string(d, *s);
          } else {
            return wrong("a string or a list of strings like ['console', 'tensorboard']");
          }
          GRPO_TRY_STATUS(check_choices(d, items, where));
          field = std::move(items);
        } else {
          const auto* l = std::get_if<std::vector<double>>(&value);
          if (l == nullptr) return wrong("a list of numbers");
          if (l->size() != 2) {
            return make_error(ErrorKind::kInvalidValue, d.name + ": expected 2 numbers", where);
          }
          for (double v : *l) GRPO_TRY_STATUS(check_number(d, v, where));
          field = *l;
        }
        return core::ok_status();
      },
      d.member);
}

core::Result<Parsed> from_toml(const KeyDef& d, const core::TomlValue& v) {
  const SourceLocation where = core::location_of(v);
  if (v.is_integer()) return Parsed{static_cast<std::int64_t>(v.as_integer())};
  if (v.is_floating()) return Parsed{static_cast<double>(v.as_floating())};
  if (v.is_boolean()) return Parsed{v.as_boolean()};
  if (v.is_string()) return Parsed{static_cast<std::string>(v.as_string())};
  if (v.is_array() && std::holds_alternative<std::vector<std::string> TrainerConfig::*>(d.member)) {
    std::vector<std::string> out;
    for (const auto& e : v.as_array()) {
      if (!e.is_string()) {
        return make_error(ErrorKind::kWrongType, d.name + ": expected a list of strings", where);
      }
      out.push_back(static_cast<std::string>(e.as_string()));
    }
    return Parsed{std::move(out)};
  }
  if (v.is_array()) {
    std::vector<double> out;
    for (const auto& e : v.as_array()) {
      if (e.is_integer()) {
        out.push_back(static_cast<double>(e.as_integer()));
      } else if (e.is_floating()) {
        out.push_back(e.as_floating());
      } else {
        return make_error(ErrorKind::kWrongType, d.name + ": expected a list of numbers", where);
      }
    }
    return Parsed{std::move(out)};
  }
  return make_error(ErrorKind::kWrongType, d.name + ": unsupported value type", where);
}

bool parse_double(std::string_view text, double& out) {
  std::string s(text);
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

core::Result<Parsed> from_text(const KeyDef& d, std::string_view raw, SourceLocation where) {
  const std::string text(core::trim(raw));
  auto bad = [&](std::string_view expected) {
    return make_error(ErrorKind::kWrongType,
                      d.name + ": expected " + std::string(expected) + ", got '" + text + "'",
                      where);
  };
  switch (d.member.index()) {
    case 0: {
      if (d.name == core::verl_key::kSaveFreq && (text == "auto" || text == "\"auto\"")) {
        return Parsed{std::string("auto")};
      }
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || p != text.data() + text.size()) return bad("an integer");
      return Parsed{v};
    }
    case 1:
    case 5: {
      double v = 0;
      if (!parse_double(text, v)) return bad("a number");
      return Parsed{v};
    }
    case 2:
      if (text == "true" || text == "1") return Parsed{true};
      if (text == "false" || text == "0") return Parsed{false};
      return bad("true or false");
    case 3:
      return Parsed{unquote(text)};
    case 6: {
      // verl's (Hydra's) list syntax: ['console','tensorboard'], [a.jsonl, 'b.jsonl'];
      // without brackets one string (items_of_string).
      if (text.empty() || text.front() != '[') return Parsed{text};
      if (text.back() != ']') return bad("a list like [a, 'b']");
      std::vector<std::string> out;
      const std::string inner = text.substr(1, text.size() - 2);
      if (core::trim(inner).empty()) return Parsed{std::move(out)};
      for (const std::string_view item : core::split(inner, ',')) {
        std::string one = unquote(std::string(core::trim(item)));
        if (one.empty()) return bad("a list like [a, 'b']");
        out.push_back(std::move(one));
      }
      return Parsed{std::move(out)};
    }
    default: {
      std::string s = text;
      if (!s.empty() && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
      std::vector<double> out;
      for (const std::string_view item : core::split(s, ',')) {
        double v = 0;
        if (!parse_double(core::trim(item), v)) return bad("a list of numbers like [0.9, 0.999]");
        out.push_back(v);
      }
      return Parsed{std::move(out)};
    }
  }
}

Status apply_table(TrainerConfig& cfg, const core::TomlValue& table, const std::string& prefix) {
  for (const auto& [key, value] : table.as_table()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_table()) {
      // A table whose name is itself a key would be a type error; tables only nest sections.
      if (find_key(name) != nullptr) {
        return make_error(ErrorKind::kWrongType, name + ": expected a value, got a table",
                          core::location_of(value));
      }
      GRPO_TRY_STATUS(apply_table(cfg, value, name));
      continue;
    }
    const KeyDef* d = find_key(name);
    if (d == nullptr) return unknown_key(name, core::location_of(value));
    GRPO_TRY(Parsed parsed, from_toml(*d, value));
    GRPO_TRY_STATUS(store(cfg, *d, parsed, core::location_of(value)));
  }
  return core::ok_status();
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> out;
    const TrainerConfig defaults;
    for (const KeyDef& d : key_defs()) {
      std::string def = format_value(defaults, d.member);
      if (d.member.index() == 5 && def.empty()) def = "(clip_ratio)";
      out.push_back(ConfigKey{d.name, type_name(d.member), def, d.doc});
    }
    return out;
  }();
  return keys;
}

Status apply_toml(TrainerConfig& cfg, std::string_view text, std::string_view file_name) {
  GRPO_TRY(core::TomlValue doc, core::parse_toml(text, file_name));
  return apply_table(cfg, doc, "");
}

Status apply_override(TrainerConfig& cfg, std::string_view kv) {
  const SourceLocation where{"--set", 0, 0};
  const auto eq = kv.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return make_error(ErrorKind::kInvalidValue,
                      "--set expects key=value, got '" + std::string(kv) + "'");
  }
  const std::string key(core::trim(kv.substr(0, eq)));
  const KeyDef* d = find_key(key);
  if (d == nullptr) return unknown_key(key, {});
  GRPO_TRY(Parsed parsed, from_text(*d, kv.substr(eq + 1), {}));
  return store(cfg, *d, parsed, {});
}

Status validate(const TrainerConfig& c) {
  auto invalid = [](std::string msg) { return make_error(ErrorKind::kInvalidValue, msg); };
  if (c.task_min_len > c.task_max_len) {
    return invalid("data.task_min_len (" + std::to_string(c.task_min_len) +
                   ") exceeds data.task_max_len (" + std::to_string(c.task_max_len) + ")");
  }
  if (c.train_batch_size % c.ppo_mini_batch_size != 0) {
    return invalid("data.train_batch_size (" + std::to_string(c.train_batch_size) +
                   ") must be a multiple of actor_rollout_ref.actor.ppo_mini_batch_size (" +
                   std::to_string(c.ppo_mini_batch_size) + ")");
  }
  if (c.resume_mode == "resume_path" && c.resume_from_path.empty()) {
    return invalid("trainer.resume_mode = resume_path needs trainer.resume_from_path");
  }
  if (c.model_path.empty()) {
    return invalid("no model: pass --model NAME_OR_FILE or set actor_rollout_ref.model.path");
  }
  GRPO_TRY_STATUS(kernels::parse_backend(c.kernels));
  if (c.dtype == "float16" || c.dtype == "fp16") {
    return invalid("actor_rollout_ref.actor.megatron.dtype = " + c.dtype +
                   " is not built: fp16 training needs loss scaling (use bfloat16 or float32)");
  }
  // A dataset's prompts are checked when it is read (data.truncation, filter_overlong_prompts).
  if (c.uses_dataset()) return core::ok_status();
  // Longest prompt and answer of the task must fit the configured lengths.
  const std::int64_t prompt =
      c.task == "addition" ? 1 + 2 * c.task_max_len + 2 : 1 + 2 + c.task_max_len + 1;
  const std::int64_t answer = (c.task == "addition" ? c.task_max_len + 1 : c.task_max_len) + 1;
  if (prompt > c.max_prompt_length) {
    return invalid("data.max_prompt_length (" + std::to_string(c.max_prompt_length) +
                   ") is shorter than the task's longest prompt (" + std::to_string(prompt) +
                   " tokens)");
  }
  if (answer > c.max_response_length) {
    return invalid("data.max_response_length (" + std::to_string(c.max_response_length) +
                   ") is shorter than the task's longest answer + <eos> (" +
                   std::to_string(answer) + " tokens)");
  }
  GRPO_TRY_STATUS(kernels::parse_backend(c.kernels));
  return core::ok_status();
}

Status validate_for_world(const TrainerConfig& c, int world_size) {
  // The model-parallel groups first: TP x PP x CP ranks hold one replica of the model, and
  // ETP x EP x PP ranks one copy of the experts.
  const std::int64_t model_parallel =
      c.tensor_model_parallel_size * c.pipeline_model_parallel_size * c.context_parallel_size;
  const std::int64_t expert_parallel =
      c.expert_tensor_parallel_size * c.expert_model_parallel_size * c.pipeline_model_parallel_size;
  for (auto [what, unit] : {std::pair<const char*, std::int64_t>{"TP x PP x CP", model_parallel},
                            {"ETP x EP x PP", expert_parallel}}) {
    if (world_size % unit != 0) {
      return make_error(ErrorKind::kInvalidValue, std::string(what) + " (" + std::to_string(unit) +
                                                      ") does not divide the number of ranks (" +
                                                      std::to_string(world_size) + ")");
    }
  }
  // Batches split over the data-parallel replicas (core::ParallelDims::dp, as
  // dims_from_config: the ranks of a TP group, a pipeline and a CP group share theirs).
  const std::int64_t replicas = world_size / model_parallel;
  auto check = [&](const char* key, std::int64_t v) -> Status {
    if (v % replicas != 0) {
      return make_error(ErrorKind::kInvalidValue,
                        std::string(key) + " (" + std::to_string(v) + ") is not divisible by " +
                            (model_parallel > 1 ? "the number of data-parallel replicas ("
                                                : "the number of ranks (") +
                            std::to_string(replicas) + "): a group is never split across ranks");
    }
    return core::ok_status();
  };
  GRPO_TRY_STATUS(check(core::verl_key::kTrainBatchSize, c.train_batch_size));
  GRPO_TRY_STATUS(check(core::verl_key::kMiniBatch, c.ppo_mini_batch_size));
  GRPO_TRY_STATUS(check(core::verl_key::kSftBatchSize, c.sft_batch_size));
  return check(core::verl_key::kValSize, c.val_size);
}

std::string to_toml(const TrainerConfig& cfg) {
  std::map<std::string, std::string> lines;
  for (const KeyDef& d : key_defs()) {
    const std::string v = format_value(cfg, d.member);
    lines[d.name] = v.empty() ? "# " + d.name + " unset" : d.name + " = " + v;
  }
  std::string out;
  for (const auto& [k, line] : lines) out += line + "\n";
  return out;
}

}  // namespace grpo::trainer
