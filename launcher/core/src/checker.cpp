#include "grpo/core/checker.h"
#include "grpo/core/family_rules.h"

#include "grpo/core/planner.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>

#include "grpo/core/text.h"

namespace grpo::core {
namespace {

const std::string A = "actor_rollout_ref.";
const std::string kTp = A + "actor.megatron.tensor_model_parallel_size";
const std::string kPp = A + "actor.megatron.pipeline_model_parallel_size";
const std::string kCp = A + "actor.megatron.context_parallel_size";
const std::string kEp = A + "actor.megatron.expert_model_parallel_size";
const std::string kEtp = A + "actor.megatron.expert_tensor_parallel_size";
const std::string kSp = A + "actor.megatron.sequence_parallel";
const std::string kDistOpt = A + "actor.megatron.use_distributed_optimizer";
const std::string kTc = A + "actor.megatron.override_transformer_config.";
const std::string kOptim = A + "actor.optim.override_optimizer_config.";
const std::string kRefTp = A + "ref.megatron.tensor_model_parallel_size";
const std::string kRefPp = A + "ref.megatron.pipeline_model_parallel_size";
const std::string kVpp = A + "actor.megatron.virtual_pipeline_model_parallel_size";
const std::string kPipelineLayout = kTc + "pipeline_model_parallel_layout";
const std::string kRemovePadding = A + "actor.megatron.use_remove_padding";
const std::string kUlysses = A + "actor.ulysses_sequence_parallel_size";
const std::string kRolloutDp = A + "rollout.data_parallel_size";
const std::string kRolloutPp = A + "rollout.pipeline_model_parallel_size";
const std::string kRolloutEp = A + "rollout.expert_parallel_size";
const std::string kMmEncoderTpMode = A + "rollout.engine_kwargs.vllm.mm_encoder_tp_mode";
const std::string kPrefixGrouper = A + "actor.use_prefix_grouper";
const std::string kBalanceBatch = "trainer.balance_batch";
const std::string kRolloutTp = A + "rollout.tensor_model_parallel_size";
const std::string kMicro = A + "actor.ppo_micro_batch_size_per_gpu";
const std::string kMini = A + "actor.ppo_mini_batch_size";
const std::string kTrainBatch = "data.train_batch_size";
const std::string kModelPath = A + "model.path";
const std::string kStrategy = A + "actor.strategy";

// A Hydra override as the script wrote it.
struct Override {
  std::string key;     // without the +, ++ or ~ prefix
  std::string prefix;  // "", "+", "++", "~"
  std::string value;
  SourceLocation where;
  bool unresolved = false;
  std::string why;
  UnresolvedKind kind = UnresolvedKind::kNone;
};

// Keys whose value only names something (the run, where its outputs go): nothing is checked
// against them, so a value known only at run time is a note, not a warning.
bool is_name_key(const std::string& key) {
  for (const char* k :
       {"trainer.project_name", "trainer.experiment_name", "trainer.default_local_dir",
        "trainer.default_hdfs_dir", "trainer.rollout_data_dir", "trainer.validation_data_dir"}) {
    if (key == k) return true;
  }
  return false;
}

// verl's PPO/GRPO trainer and the recipes built on it (main_generation, main_eval and the SFT
// trainer have other configs and are not checked).
bool is_entry_point(const std::string& word) {
  if (word == "verl.trainer.main_ppo") return true;
  if (word.rfind("recipe.", 0) == 0 && word.find(".main_") != std::string::npos) return true;
  const auto slash = word.rfind('/');
  const std::string base = slash == std::string::npos ? word : word.substr(slash + 1);
  return base.rfind("main_ppo", 0) == 0 && base.size() > 3 &&
         base.compare(base.size() - 3, 3, ".py") == 0 && word.find("verl") != std::string::npos;
}

std::string strip_model_suffixes(std::string s) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const char* suffix : {"-instruct", "-base", "-chat", "-hf", "/"}) {
      const std::string suf(suffix);
      if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
        s.resize(s.size() - suf.size());
        changed = true;
      }
    }
  }
  return s;
}

std::string last_component(std::string path) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<std::int64_t> parse_int(const std::string& v) {
  std::int64_t out = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || p != v.data() + v.size()) return std::nullopt;
  return out;
}

// A Hydra float ("1e-6", "0.5", "+2", "inf"); nullopt when any of `v` is left over.
std::optional<double> parse_double(const std::string& v) {
  const char* from = !v.empty() && v.front() == '+' ? v.data() + 1 : v.data();
  const char* end = v.data() + v.size();
  double d = 0;
  const auto [p, ec] = std::from_chars(from, end, d);
  if (ec != std::errc{} || p != end) return std::nullopt;
  return d;
}

class RunChecker {
 public:
  RunChecker(const ParsedScript& script, const ShellCommand& cmd, std::size_t entry,
             const ConfigSchema& schema, const SourceProvider& provider,
             const CheckOptions& options, const std::map<std::string, ShellAssignment>& env)
      : script_(script),
        cmd_(cmd),
        entry_(entry),
        schema_(schema),
        provider_(provider),
        options_(options),
        env_(env) {}

  Result<CheckedRun> run() {
    run_.file = cmd_.file.empty() ? script_.file : cmd_.file;
    run_.line = cmd_.line;
    run_.conditions = cmd_.conditions;
    run_.engines = options_.engines;
    run_.entry_point = cmd_.words[entry_].text;
    read_overrides();
    check_keys_and_values();
    GRPO_TRY_STATUS(resolve_model_and_cluster());
    if (have_model_) {
      build_layout();
      if (options_.parallel) check_family();
      if (options_.parallel) check_parallel();
      if (options_.parallel) check_token_caps();
      if (options_.data_types) check_data_types();
      if (options_.memory) check_memory();
    }
    check_environment();
    // The script's own lines first, then those of the files it sources.
    std::stable_sort(run_.diagnostics.begin(), run_.diagnostics.end(),
                     [&](const Diagnostic& a, const Diagnostic& b) {
                       const bool a_other = a.where.file != script_.file;
                       const bool b_other = b.where.file != script_.file;
                       if (a_other != b_other) return b_other;
                       if (a.where.file != b.where.file) return a.where.file < b.where.file;
                       if (a.where.line != b.where.line) return a.where.line < b.where.line;
                       if (a.where.column != b.where.column) return a.where.column < b.where.column;
                       return to_string(a.code) < to_string(b.code);
                     });
    return run_;
  }

 private:
  SourceLocation at(const ShellWord& w) const {
    return {w.file.empty() ? script_.file : w.file, w.line, w.column};
  }
  SourceLocation command_location() const {
    return {cmd_.file.empty() ? script_.file : cmd_.file, cmd_.line, 0};
  }

  void add(DiagCode code, const std::string& setting, std::string message, std::string hint,
           SourceLocation where, std::optional<Severity> severity = std::nullopt) {
    Diagnostic d = make_diag(code, setting, std::move(message), std::move(hint), std::move(where));
    if (severity) d.severity = *severity;
    // One finding per (code, line): the engines' rules can trip twice over one setting.
    for (const auto& e : run_.diagnostics) {
      if (e.code == d.code && e.where.line == d.where.line && e.where.file == d.where.file &&
          e.setting == d.setting)
        return;
    }
    run_.diagnostics.push_back(std::move(d));
  }

  void read_overrides() {
    const auto& words = cmd_.words;
    for (std::size_t i = entry_ + 1; i < words.size(); ++i) {
      const ShellWord& w = words[i];
      if (w.from_args && w.text.empty()) {
        run_.passes_args = true;
        continue;
      }
      const std::string& t = w.text;
      if (t.rfind("--config-name", 0) == 0 || t.rfind("--config-path", 0) == 0 || t == "-cn" ||
          t == "-cp") {
        const bool name = t.rfind("--config-name", 0) == 0 || t == "-cn";
        std::string value;
        const auto eq = t.find('=');
        if (eq != std::string::npos) {
          value = t.substr(eq + 1);
        } else if (i + 1 < words.size()) {
          value = words[++i].text;
        }
        if (name) config_name_ = value;
        continue;
      }
      if (t.empty() || t[0] == '-') continue;  // other Hydra flags (--multirun, ...)
      if (w.unresolved && t.find('=') == std::string::npos && t[0] != '~') {
        // Words the reader could not expand ($EXTRA_ARGS unset, set in undecidable branches):
        // they may hold overrides that are not checked.
        add(DiagCode::kUnresolved, t,
            "the words of " + t + " are not known statically (" + w.unresolved_why +
                "): any overrides in them are not checked",
            "set the variable in the script, or pass the overrides literally", at(w),
            Severity::kInfo);
        continue;
      }
      Override o;
      std::string body = t;
      for (const char* p : {"++", "+", "~"}) {
        if (body.rfind(p, 0) == 0) {
          o.prefix = p;
          body = body.substr(std::string(p).size());
          break;
        }
      }
      const auto eq = body.find('=');
      if (eq == std::string::npos && o.prefix != "~") continue;  // not an override
      o.key = body.substr(0, eq);
      o.value = eq == std::string::npos ? std::string{} : body.substr(eq + 1);
      o.where = at(w);
      o.unresolved = w.unresolved;
      o.why = w.unresolved_why;
      o.kind = w.unresolved_kind;
      if (o.key.empty()) continue;
      overrides_.push_back(o);
      by_key_[o.key] = overrides_.size() - 1;
    }
    run_.overrides = overrides_.size();
  }

  const Override* find(const std::string& key) const {
    const auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : &overrides_[it->second];
  }
  // A value the checker can use: set, resolved, and not a removal (~key).
  const Override* usable(const std::string& key) const {
    const Override* o = find(key);
    return o != nullptr && !o->unresolved && o->prefix != "~" ? o : nullptr;
  }
  SourceLocation where_or_command(const std::string& key) const {
    const Override* o = find(key);
    return o != nullptr ? o->where : command_location();
  }

  std::int64_t int_setting(const std::string& key, std::int64_t fallback, std::int64_t min = 1) {
    const Override* o = usable(key);
    if (o == nullptr || ascii_lower(o->value) == "null" || o->value.empty()) return fallback;
    const auto v = parse_int(o->value);
    if (!v || *v < min) {
      add(DiagCode::kInvalidSetting, key,
          key + "=" + o->value + ": expected an integer" +
              (min > 0 ? " >= " + std::to_string(min) : ""),
          "give a whole number", o->where);
      return fallback;
    }
    return *v;
  }
  bool bool_setting(const std::string& key, bool fallback) {
    const Override* o = usable(key);
    if (o == nullptr || o->value.empty()) return fallback;
    const auto v = parse_bool_word(o->value);
    if (!v) {
      add(DiagCode::kInvalidSetting, key, key + "=" + o->value + ": expected True or False",
          "use True or False", o->where);
      return fallback;
    }
    return *v;
  }
  double double_setting(const std::string& key, double fallback) {
    const Override* o = usable(key);
    if (o == nullptr || o->value.empty()) return fallback;
    const auto v = parse_double(o->value);
    if (!v) {
      add(DiagCode::kInvalidSetting, key, key + "=" + o->value + ": expected a number",
          "give a number", o->where);
      return fallback;
    }
    return *v;
  }
  std::string string_setting(const std::string& key, std::string fallback) {
    const Override* o = usable(key);
    if (o == nullptr) return fallback;
    std::string v = o->value;
    if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
      v = v.substr(1, v.size() - 2);
    return v;
  }

  void check_keys_and_values() {
    for (const auto& o : overrides_) {
      const KeyCheck k = schema_.check_key(o.key);
      if (!k.known) {
        std::string msg = "'" + o.key + "' is not a setting verl or Megatron-Core knows";
        if (!k.detail.empty()) msg += " (" + k.detail + ")";
        add(DiagCode::kUnknownKey, o.key, msg,
            k.suggestion.empty() ? "remove it; see data/schema/ for the valid keys"
                                 : "did you mean '" + k.suggestion + "'?",
            o.where);
      }
      if (o.unresolved) {
        // A run-time value ($(date ...), $RANDOM) in a value that is only a name is expected.
        const bool note =
            o.kind != UnresolvedKind::kMixed && is_name_key(o.key) &&
            (o.kind == UnresolvedKind::kCommandSubstitution || o.kind == UnresolvedKind::kRunTime);
        add(DiagCode::kUnresolved, o.key, o.key + " cannot be resolved statically: " + o.why,
            note ? "nothing is checked against it; this is a note"
                 : "give the value literally or with a default (${VAR:-value})",
            o.where, note ? std::optional<Severity>(Severity::kInfo) : std::nullopt);
      }
    }
  }

  Status resolve_model_and_cluster() {
    // Hardware.
    run_.profile = options_.profile.empty() ? kDefaultCheckProfile : options_.profile;
    run_.profile_is_default = options_.profile.empty();
    GRPO_TRY(cluster_, load_cluster(provider_, run_.profile, options_.sets));
    cluster_.nodes = static_cast<int>(int_setting("trainer.nnodes", 1));
    cluster_.gpus_per_node = static_cast<int>(int_setting("trainer.n_gpus_per_node", 8));
    run_.nodes = cluster_.nodes;
    run_.gpus_per_node = cluster_.gpus_per_node;
    // Model.
    if (!options_.model.empty()) {
      GRPO_TRY(model_, load_model(provider_, options_.model));
      have_model_ = true;
    } else if (const Override* o = usable(kModelPath)) {
      // An absolute path that holds a config.json here (the login node often sees the cluster's
      // file system) is read as `--model DIR` would; one that does not exist falls back to the
      // spec whose name or Hugging Face id matches its last component.
      if (const std::string path = string_setting(kModelPath, ""); path.rfind('/', 0) == 0) {
        auto m = load_model(provider_, path);
        if (m.ok()) {
          model_ = std::move(m).value();
          have_model_ = true;
          run_.model = model_.name;
          return ok_status();
        }
        if (m.error().kind != ErrorKind::kNotFound) return m.error();
      }
      const std::string wanted =
          strip_model_suffixes(ascii_lower(last_component(string_setting(kModelPath, ""))));
      for (const auto& name : provider_.names(CatalogKind::kModel)) {
        auto m = load_model(provider_, name);
        if (!m.ok()) continue;
        const std::string hf = strip_model_suffixes(ascii_lower(last_component(m->hf_id)));
        if (wanted == ascii_lower(name) || (!hf.empty() && wanted == hf)) {
          model_ = std::move(m).value();
          have_model_ = true;
          break;
        }
      }
      if (!have_model_) {
        add(DiagCode::kUnresolved, kModelPath,
            "model '" + last_component(o->value) +
                "' matches no model spec, so heads, layers and memory are not checked",
            "pass --model NAME (see `grpo-launch profiles`) or add a spec to your profile "
            "directory",
            o->where);
      }
    } else {
      add(DiagCode::kUnresolved, kModelPath, "the script does not say which model it trains",
          "pass --model NAME", command_location());
    }
    run_.model = have_model_ ? model_.name : "";
    return ok_status();
  }

  // What decides the memory of the update besides the layout (docs/memory-model.md): how
  // micro batches are packed and capped, the log-prob path, LoRA, and the rollout engine's sleep.
  void read_memory_settings(WorkloadSpec& w) {
    // verl's Megatron engine packs by actor.megatron.use_remove_padding, FSDP by the model's.
    w.remove_padding = megatron_ ? bool_setting(kRemovePadding, true)
                                 : bool_setting(A + "model.use_remove_padding", true);
    if (bool_setting(A + "actor.use_dynamic_bsz", false)) {
      w.max_token_len_per_gpu = int_setting(A + "actor.ppo_max_token_len_per_gpu", 16384);
      w.logprob_max_token_len_per_gpu =
          int_setting(A + "rollout.log_prob_max_token_len_per_gpu", w.max_token_len_per_gpu);
    }
    w.fused_logprob = bool_setting(A + "actor.use_fused_kernels",
                                   bool_setting(A + "model.use_fused_kernels", false));
    w.entropy_chunking = bool_setting(A + "actor.entropy_from_logits_with_chunking", false);
    w.prefix_grouper = bool_setting(kPrefixGrouper, false);
    w.free_cache_engine = bool_setting(A + "rollout.free_cache_engine", true);
    w.engine_worker =
        ascii_lower(string_setting("trainer.use_legacy_worker_impl", "auto")) == "disable";
    w.lora.rank = static_cast<int>(int_setting(A + "model.lora_rank", 0, 0));
    w.lora.alpha = double_setting(A + "model.lora_alpha", 16);
    if (usable(A + "model.target_modules") != nullptr) {
      w.lora.targets.clear();
      std::string list = string_setting(A + "model.target_modules", "all-linear");
      for (char& ch : list) {
        if (ch == '[' || ch == ']' || ch == '\'' || ch == '"') ch = ' ';
      }
      for (const std::string_view item : split(list, ',')) {
        if (!trim(item).empty()) w.lora.targets.emplace_back(trim(item));
      }
      if (w.lora.targets.empty()) w.lora.targets = {"all-linear"};
    }
  }

  // verl's Megatron worker builds only some families (family_rules.h).
  void check_family() {
    if (!megatron_) return;
    const bool mbridge = bool_setting(A + "actor.megatron.use_mbridge", true);
    const bool vanilla = bool_setting(A + "actor.megatron.vanilla_mbridge", true);
    const Override* o = usable(kStrategy);
    const SourceLocation where = o != nullptr ? o->where : command_location();
    const FamilySupport f = verl_megatron_supports(model_, mbridge, vanilla);
    if (!f.ok) {
      add(DiagCode::kInvalidSetting, "strategy", f.why, f.fix, where);
      return;
    }
    const std::string window =
        mbridge_window_ignored(model_, mbridge, vanilla, workload_.seq_length());
    if (!window.empty()) {
      add(DiagCode::kInvalidSetting, "strategy", window,
          "keep data.max_prompt_length + data.max_response_length within the window, or use "
          "verl's FSDP strategy (transformers' attention honours it)",
          where, Severity::kWarning);
    }
  }

  void build_layout() {
    const std::string strategy = string_setting(kStrategy, "");
    megatron_ = strategy == "megatron" ||
                (strategy.empty() && config_name_.find("megatron") != std::string::npos);
    run_.strategy = megatron_ ? "megatron" : "fsdp";
    WorkloadSpec& w = workload_;
    w.train_batch_size = int_setting(kTrainBatch, 1024);
    w.rollout_n = int_setting(A + "rollout.n", 1);
    w.ppo_mini_batch_size = int_setting(kMini, 256);
    w.max_prompt_length = int_setting("data.max_prompt_length", 512);
    w.max_response_length = int_setting("data.max_response_length", 512);
    w.ppo_epochs = int_setting(A + "actor.ppo_epochs", 1);
    w.gpu_memory_utilization = double_setting(A + "rollout.gpu_memory_utilization", 0.5);
    w.rollout_sglang = string_setting(A + "rollout.name", "vllm") == "sglang";
    w.max_num_seqs = int_setting(A + "rollout.max_num_seqs", 1024);
    w.use_kl_loss = bool_setting(A + "actor.use_kl_loss", false);
    w.memory_headroom = cluster_.grpo.memory_headroom;
    w.achievable_mfu = cluster_.grpo.achievable_mfu;
    const bool fp16 = bool_setting(kTc + "fp16", false);
    w.dtype = fp16 ? Dtype::kFp16 : Dtype::kBf16;
    read_memory_settings(w);
    cluster_.grpo = w;
    run_.workload = w;

    Layout& l = run_.layout;
    const int world = cluster_.world_size();
    if (megatron_) {
      l.dims.tp = static_cast<int>(int_setting(kTp, 1));
      l.dims.pp = static_cast<int>(int_setting(kPp, 1));
      l.dims.cp = static_cast<int>(int_setting(kCp, 1));
      l.dims.ep = static_cast<int>(int_setting(kEp, 1));
      // Megatron-Core: expert_tensor_parallel_size None means "the same as TP" (MoE models).
      l.dims.etp = static_cast<int>(int_setting(kEtp, model_.is_moe() ? l.dims.tp : 1));
      l.sequence_parallel = l.dims.tp > 1 && bool_setting(kSp, true);
      l.distributed_optimizer = bool_setting(kDistOpt, true);
      l.offload.params = bool_setting(A + "actor.megatron.param_offload", false);
      l.offload.grads = bool_setting(A + "actor.megatron.grad_offload", false);
      l.offload.optimizer = bool_setting(A + "actor.megatron.optimizer_offload", false);
      l.first_stage_layers =
          static_cast<int>(int_setting(kTc + "num_layers_in_first_pipeline_stage", 0, 0));
      l.last_stage_layers =
          static_cast<int>(int_setting(kTc + "num_layers_in_last_pipeline_stage", 0, 0));
      l.split_counts_embedding =
          bool_setting(kTc + "account_for_embedding_in_pipeline_split", false);
      l.split_counts_loss = bool_setting(kTc + "account_for_loss_in_pipeline_split", false);
      l.recompute = string_setting(kTc + "recompute_granularity", "") == "full" ? Recompute::kFull
                                                                                : Recompute::kNone;
      l.recompute_method = string_setting(kTc + "recompute_method", "uniform") == "block"
                               ? RecomputeMethod::kBlock
                               : RecomputeMethod::kUniform;
      l.recompute_layers = static_cast<int>(int_setting(kTc + "recompute_num_layers", 1));
      // Megatron-Core's CPU optimizer, passed through verl's override_optimizer_config.
      l.offload.cpu_optimizer = bool_setting(kOptim + "optimizer_cpu_offload", false);
      l.offload.cpu_optimizer_fraction = double_setting(kOptim + "optimizer_offload_fraction", 1.0);
      if (find(kRefTp) != nullptr) l.ref_tp = static_cast<int>(int_setting(kRefTp, l.dims.tp));
      if (find(kRefPp) != nullptr) l.ref_pp = static_cast<int>(int_setting(kRefPp, l.dims.pp));
      l.vpp = static_cast<int>(int_setting(kVpp, 0));
      l.pipeline_layout = string_setting(kPipelineLayout, "");
      if (ascii_lower(l.pipeline_layout) == "null") l.pipeline_layout.clear();
    } else {
      l.fsdp = true;
      l.offload.params = bool_setting(A + "actor.fsdp_config.param_offload", false);
      l.offload.optimizer = bool_setting(A + "actor.fsdp_config.optimizer_offload", false);
      l.recompute = bool_setting(A + "model.enable_gradient_checkpointing", true)
                        ? Recompute::kFull
                        : Recompute::kNone;
      // verl's FSDP worker: data-parallel size = world / Ulysses size (a (dp, sp) device mesh).
      // The layout carries the Ulysses size as its CP; FSDP still shards over every rank.
      l.dims.cp = static_cast<int>(int_setting(kUlysses, 1));
    }
    const int mp = l.dims.tp * l.dims.pp * l.dims.cp;
    l.dims.dp = mp > 0 && world % mp == 0 ? world / mp : 1;
    l.rollout_tp = static_cast<int>(int_setting(kRolloutTp, 2));
    l.rollout_dp = static_cast<int>(int_setting(kRolloutDp, 1));
    l.rollout_pp = static_cast<int>(int_setting(kRolloutPp, 1));
    l.rollout_ep = static_cast<int>(int_setting(kRolloutEp, 1));
    l.vision_data_parallel = ascii_lower(string_setting(kMmEncoderTpMode, "weights")) == "data";
    if (find(kMicro) != nullptr) {
      l.micro_batch = static_cast<int>(int_setting(kMicro, 1));
      micro_given_ = true;
    } else if (bool_setting(A + "actor.use_dynamic_bsz", false)) {
      const std::int64_t max_tokens = int_setting(A + "actor.ppo_max_token_len_per_gpu", 16384);
      l.micro_batch = static_cast<int>(
          std::max<std::int64_t>(1, max_tokens / std::max<std::int64_t>(1, w.seq_length())));
    }
  }

  // Maps a planner setting name to the verl key that sets it.
  std::string key_for(const std::string& setting) const {
    if (setting == "cp" && !megatron_) return kUlysses;
    static const std::map<std::string, std::string> keys = {
        {"tp", kTp},
        {"pp", kPp},
        {"cp", kCp},
        {"ep", kEp},
        {"etp", kEtp},
        {"dp", "trainer.n_gpus_per_node"},
        {"rollout_tp", kRolloutTp},
        {"ref_tp", kRefTp},
        {"ref_pp", kRefPp},
        {"vpp", kVpp},
        {"pipeline_layout", kPipelineLayout},
        {"remove_padding", kRemovePadding},
        {"micro_batch", kMicro},
        {"ppo_mini_batch_size", kMini},
        {"train_batch_size", kTrainBatch},
        {"sequence_parallel", kSp},
        {"first_stage_layers", kTc + "num_layers_in_first_pipeline_stage"},
        {"grpo.dtype", kTc + "bf16"},
    };
    const auto it = keys.find(setting);
    return it == keys.end() ? setting : it->second;
  }

  void check_parallel() {
    const Layout& l = run_.layout;
    for (Diagnostic d : check_legality(model_, cluster_, workload_, l, options_.engines)) {
      if (check_group(d.code) != "parallel") continue;
      if (d.setting == "micro_batch" && !micro_given_) continue;  // verl's default is dynamic
      std::string key = key_for(d.setting);
      if (d.code == DiagCode::kWorldSizeMismatch && d.setting == "tp" && !megatron_) {
        // FSDP: only the Ulysses size can fail to divide the world.
        key = kUlysses;
        d.message = "world size " + std::to_string(cluster_.world_size()) +
                    " is not divisible by the Ulysses size " + std::to_string(l.dims.cp) +
                    " (verl's FSDP worker builds a (dp, sp) device mesh over every rank)";
        d.hint = "use an ulysses_sequence_parallel_size dividing " +
                 std::to_string(cluster_.world_size());
      } else if (d.code == DiagCode::kWorldSizeMismatch && d.setting == "tp") {
        // TP x PP x CP does not divide the world: blame the size the script set that does not
        // divide it (else any size the script set).
        const int world = cluster_.world_size();
        std::string any_set;
        for (const auto& [k, v] : {std::pair{kTp, l.dims.tp}, {kPp, l.dims.pp}, {kCp, l.dims.cp}}) {
          if (find(k) == nullptr) continue;
          if (any_set.empty()) any_set = k;
          if (v > 0 && world % v != 0) {
            any_set = k;
            break;
          }
        }
        if (!any_set.empty()) key = any_set;
      }
      if (d.setting == "rollout_tp" &&
          (d.code == DiagCode::kWorldSizeMismatch || d.code == DiagCode::kTpCrossesNode) &&
          (l.rollout_dp > 1 || l.rollout_pp > 1)) {
        // A replica is TP x DP x PP: blame the rollout DP (or PP) the script set when the rollout
        // TP alone would be fine.
        const int world = cluster_.world_size();
        const int gpn = cluster_.gpus_per_node;
        const int rtp = l.rollout_tp;
        const bool tp_alone_ok =
            rtp > 0 && world % rtp == 0 && (rtp <= gpn ? gpn % rtp == 0 : rtp % gpn == 0);
        const std::string& other = l.rollout_dp > 1 ? kRolloutDp : kRolloutPp;
        if (tp_alone_ok && find(other) != nullptr) key = other;
      }
      const Override* o = find(key);
      d.setting = key;
      d.where = o != nullptr ? o->where : command_location();
      if (o == nullptr) d.message += " (verl's default for " + key + ")";
      add(d.code, d.setting, d.message, d.hint, d.where, d.severity);
    }
    check_group_split();
    if (!megatron_) {
      const auto sp = int_setting(A + "actor.ulysses_sequence_parallel_size", 1);
      if (sp > 1 && model_.num_attention_heads % sp != 0) {
        add(DiagCode::kHeadsNotDivisible, A + "actor.ulysses_sequence_parallel_size",
            std::to_string(model_.num_attention_heads) +
                " attention heads are not divisible by the Ulysses size " + std::to_string(sp),
            "use a size dividing the head count",
            where_or_command(A + "actor.ulysses_sequence_parallel_size"));
      }
    }
  }

  // verl >= 0.8 with use_prefix_grouper and balance_batch keeps each prompt's responses on one
  // rank and raises ValueError when the prompts do not divide over DP (ray_trainer.py
  // _balance_batch). Otherwise a split group is fine: advantages are computed on the driver.
  void check_group_split() {
    const Layout& l = run_.layout;
    if (options_.engines.verl < EngineVersion{0, 8, 0}) return;
    if (!bool_setting(kPrefixGrouper, false) || !bool_setting(kBalanceBatch, true)) return;
    const std::int64_t prompts = workload_.train_batch_size;
    if (l.dims.dp < 1 || prompts % l.dims.dp == 0) return;
    add(DiagCode::kGroupSplit, kTrainBatch,
        std::to_string(prompts) + " prompts do not divide over DP = " + std::to_string(l.dims.dp) +
            " ranks: with use_prefix_grouper and balance_batch verl keeps each prompt's "
            "responses on one rank and raises ValueError",
        "make data.train_batch_size a multiple of " + std::to_string(l.dims.dp) +
            ", or turn use_prefix_grouper off",
        where_or_command(kTrainBatch));
  }

  void check_data_types() {
    const Override* fp16 = usable(kTc + "fp16");
    const Override* bf16 = usable(kTc + "bf16");
    const bool is_fp16 = fp16 != nullptr && parse_bool_word(fp16->value).value_or(false);
    const bool is_bf16 = bf16 != nullptr && parse_bool_word(bf16->value).value_or(false);
    if (is_fp16 && is_bf16) {
      const Override* later = fp16->where.line > bf16->where.line ? fp16 : bf16;
      add(DiagCode::kDtypeConflict, later->key,
          "fp16 and bf16 are both enabled in override_transformer_config",
          "enable exactly one of them", later->where);
    }
    if (const Override* pd = usable(kTc + "params_dtype")) {
      std::string v = ascii_lower(pd->value);
      v.erase(std::remove(v.begin(), v.end(), '\''), v.end());
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      if (v.rfind("torch.", 0) == 0) v = v.substr(6);
      const bool v16 = v == "fp16" || v == "float16" || v == "half";
      const bool vbf = v == "bf16" || v == "bfloat16";
      if ((is_fp16 && !v16) || (is_bf16 && !vbf)) {
        add(DiagCode::kDtypeConflict, pd->key,
            "params_dtype=" + pd->value + " contradicts " + (is_fp16 ? "fp16" : "bf16") +
                "=True: Megatron keeps its parameters in the training dtype and fp32 master copies "
                "apart",
            std::string("remove params_dtype or set it to ") + (is_fp16 ? "fp16" : "bf16"),
            pd->where);
      }
    }
    const Override* scaling = usable(kTc + "apply_query_key_layer_scaling");
    const Override* softmax = usable(kTc + "attention_softmax_in_fp32");
    const bool softmax_fp32 = softmax == nullptr || parse_bool_word(softmax->value).value_or(true);
    if (scaling != nullptr && parse_bool_word(scaling->value).value_or(false) && !softmax_fp32) {
      add(DiagCode::kDtypeConflict, softmax->key,
          "apply_query_key_layer_scaling=True requires attention_softmax_in_fp32=True "
          "(Megatron-Core asserts it)",
          "set attention_softmax_in_fp32=True", softmax->where);
    } else if (is_fp16 && softmax != nullptr && !softmax_fp32) {
      add(DiagCode::kDtypeConflict, softmax->key,
          "fp16 training with the attention softmax in fp16 overflows on long sequences",
          "set attention_softmax_in_fp32=True", softmax->where, Severity::kWarning);
    }
    if (!is_fp16 && !cluster_.device.bf16) {
      const Override* where = bf16 != nullptr ? bf16 : find(kModelPath);
      add(DiagCode::kDtypeConflict, where != nullptr ? where->key : kModelPath,
          "bf16 training (verl's default) on " + cluster_.device.kind + ", which has no bf16",
          "train in fp16 (override_transformer_config.fp16=True with loss scaling) or use newer "
          "hardware",
          where != nullptr ? where->where : command_location());
    }
    if (const Override* rd = usable(A + "rollout.dtype")) {
      const std::string v = ascii_lower(string_setting(A + "rollout.dtype", ""));
      const bool r16 = v == "float16" || v == "fp16" || v == "half";
      const bool rbf = v == "bfloat16" || v == "bf16";
      if (const std::string refused = r16 ? vllm_float16_refusal(model_) : ""; !refused.empty()) {
        add(DiagCode::kDtypeConflict, rd->key, refused, "use bfloat16 for the rollout", rd->where);
      } else if ((r16 && !is_fp16) || (rbf && is_fp16)) {
        add(DiagCode::kDtypeConflict, rd->key,
            "rollout dtype " + rd->value + " differs from the actor's " +
                (is_fp16 ? "fp16" : "bf16") + ": log-probs of the rollout and the actor disagree",
            "use the same dtype for rollout and actor", rd->where, Severity::kWarning);
      }
    }
  }

  // verl's dynamic batch size packs whole sequences: a cap below one sequence is refused at the
  // first update (verl/utils/seqlen_balancing.py rearrange_micro_batches: "max_token_len must
  // be greater than the sequence length"). A sequence split over the Ulysses / CP group needs
  // the cap times that size.
  void check_token_caps() {
    if (!workload_.dynamic_batch()) return;
    const std::int64_t split = std::max(1, run_.layout.dims.cp);
    const std::int64_t seq = workload_.seq_length();
    const std::vector<std::pair<std::string, std::int64_t>> caps = {
        {A + "actor.ppo_max_token_len_per_gpu", workload_.max_token_len_per_gpu},
        {A + "rollout.log_prob_max_token_len_per_gpu", workload_.logprob_max_token_len_per_gpu}};
    for (const auto& [key, cap] : caps) {
      if (cap <= 0 || cap * split >= seq) continue;
      add(DiagCode::kInvalidSetting, key,
          key + "=" + std::to_string(cap) + (split > 1 ? " x " + std::to_string(split) : "") +
              " tokens cannot hold one sequence of max_prompt_length + max_response_length = " +
              std::to_string(seq) +
              ": verl's dynamic batch size fails at the first step (\"max_token_len must be "
              "greater than the sequence length\")",
          "raise it to at least " + std::to_string((seq + split - 1) / split),
          where_or_command(key));
    }
  }

  void check_memory() {
    const Layout& l = run_.layout;
    if (!l.fsdp) {
      // The estimate needs a legal shape (under the engine versions checked); parallel errors
      // are reported already.
      for (const auto& d : check_legality(model_, cluster_, workload_, l, options_.engines)) {
        const bool structural =
            d.code == DiagCode::kWorldSizeMismatch || d.code == DiagCode::kHeadsNotDivisible ||
            d.code == DiagCode::kKvHeadsNotDivisible || d.code == DiagCode::kLayersNotDivisible ||
            d.code == DiagCode::kExpertsNotDivisible || d.code == DiagCode::kTpCrossesNode;
        if (structural && d.severity == Severity::kError) return;
      }
    }
    run_.memory = estimate_memory(model_, cluster_, workload_, l);
    const MemoryEstimate& m = *run_.memory;
    if (m.fits()) return;
    std::string where_key = kModelPath;
    const std::string utilization = A + "rollout.gpu_memory_utilization";
    if (m.limiting().phase == "rollout" && find(utilization) != nullptr) {
      where_key = utilization;  // the rollout's own budget, not the training micro batch
    } else if (find(kMicro) != nullptr) {
      where_key = kMicro;
    } else if (workload_.dynamic_batch() && find(A + "actor.ppo_max_token_len_per_gpu")) {
      where_key = A + "actor.ppo_max_token_len_per_gpu";
    } else if (megatron_ && find(kTp) != nullptr) {
      where_key = kTp;
    }
    Candidate c;
    c.layout = l;
    c.memory = m;
    if (!m.engine.weights_fit && workload_.rollout_sglang) {
      add(DiagCode::kOomRisk, where_key,
          "SGLang's mem_fraction_static (gpu_memory_utilization) x " +
              format_fixed(cluster_.device.memory_gib, 0) +
              " GiB = " + format_gib(m.engine.budget) +
              " holds what stays resident for the rollout and " + format_gib(m.engine.weights) +
              " of rollout weights at rollout TP=" + std::to_string(l.rollout_tp) +
              ", and leaves no KV cache for one sequence (sglang model_runner "
              "profile_max_num_token: \"Not enough memory\")",
          "raise gpu_memory_utilization or rollout.tensor_model_parallel_size, or offload the "
          "actor's parameters and optimizer",
          where_or_command(where_key));
      return;
    }
    if (!m.engine.weights_fit) {
      add(DiagCode::kOomRisk, where_key,
          "rollout weights " + format_gib(m.engine.weights) + " per device at rollout TP=" +
              std::to_string(l.rollout_tp) + " do not fit gpu_memory_utilization x " +
              format_fixed(cluster_.device.memory_gib, 0) + " GiB = " + format_gib(m.engine.budget),
          "raise rollout.tensor_model_parallel_size or gpu_memory_utilization",
          where_or_command(where_key));
      return;
    }
    const PhaseMemory& p = m.limiting();
    std::string breakdown;
    for (const auto& item : p.items) {
      if (item.bytes > 0)
        breakdown += (breakdown.empty() ? "" : ", ") + item.name + " " + format_gib(item.bytes);
    }
    const std::string needs = p.phase + " phase needs " + format_gib(p.floor_total()) +
                              " (floor) to " + format_gib(p.total()) +
                              " (worst case) per device of " + format_gib(p.capacity) +
                              " usable on " + cluster_.device.kind + " [" + breakdown + "]";
    if (!m.floor_fits()) {
      // It cannot run whatever the data: an error, unless the floor still fits the whole device:
      // the headroom (grpo.memory_headroom, 5 %) is the margin kept for the estimate's own error
      // (docs/memory-model.md "Simplifications and known gaps"), so a floor inside it is a
      // warning.
      const double device = cluster_.device.memory_gib * kGiB;
      // Sharded state shrinks with the world size: when the script's node or device count is
      // not known statically (a Slurm variable the submission sets), the verdict rests on the
      // assumed count and stays a warning.
      std::string assumed;
      for (const char* key : {"trainer.nnodes", "trainer.n_gpus_per_node"}) {
        const Override* o = find(key);
        if (o != nullptr && o->unresolved)
          assumed += (assumed.empty() ? "" : " and ") + std::string(key);
      }
      std::string soft;  // why a floor that does not fit is only a warning
      if (p.floor_total() <= device) {
        soft = "the floor is inside the " + format_fixed(100.0 * workload_.memory_headroom, 0) +
               " % headroom kept for the estimate's error (" + format_gib(device) +
               " on the device): it may not fit";
      } else if (!assumed.empty()) {
        soft = "the floor does not fit at the assumed " + std::to_string(cluster_.nodes) + " x " +
               std::to_string(cluster_.gpus_per_node) + " devices (" + assumed +
               " not known statically): it may fit on more";
      }
      if (!soft.empty()) {
        add(DiagCode::kOomRisk, where_key, needs + "; " + soft, cheapest_fix(c, cluster_),
            where_or_command(where_key), Severity::kWarning);
        return;
      }
      add(DiagCode::kOomRisk, where_key, needs + "; even the floor does not fit",
          cheapest_fix(c, cluster_), where_or_command(where_key));
      return;
    }
    // Only the worst case does not fit: a warning that says where it stops fitting.
    std::string when = "when every sequence reaches its maximum length";
    if (p.phase == "training" && !workload_.dynamic_batch()) {
      const auto longest = longest_fitting_response(model_, cluster_, workload_, l);
      when = longest ? "when responses grow past " + std::to_string(*longest) +
                           " tokens (max_response_length " +
                           std::to_string(workload_.max_response_length) + ")"
                     : "even with 1-token responses: " + std::to_string(l.micro_batch) +
                           " prompts of " + std::to_string(workload_.max_prompt_length) +
                           " tokens in one micro batch do not fit";
    } else if (p.phase == "training") {
      when = "when a micro batch is packed to its " +
             std::to_string(workload_.max_token_len_per_gpu) + "-token cap";
    }
    add(DiagCode::kOomRisk, where_key, needs + "; it runs out of memory " + when,
        cheapest_fix(c, cluster_), where_or_command(where_key), Severity::kWarning);
  }

  void check_environment() {
    const bool npu = string_setting("trainer.device", "") == "npu" ||
                     cluster_.device.vendor == DeviceVendor::kAscend;
    for (const auto& [name, a] : env_) {
      const SourceLocation where = at(a.value);
      const std::string& value = a.value.text;
      const EnvCheck e = schema_.check_env(name);
      if (e.status == EnvStatus::kUnknown) {
        add(DiagCode::kEnvUnknown, name,
            name + " is not an environment variable " + e.library + " documents",
            e.suggestion.empty() ? "remove it" : "did you mean " + e.suggestion + "?", where);
      }
      if (name.rfind("NCCL_", 0) == 0 && npu) {
        add(DiagCode::kEnvConflict, name,
            name + " on an Ascend NPU run: HCCL does not read NCCL settings",
            "use the HCCL_* equivalent", where, Severity::kWarning);
      }
      if (name.rfind("HCCL_", 0) == 0 && !npu && cluster_.device.vendor == DeviceVendor::kNvidia) {
        add(DiagCode::kEnvConflict, name,
            name + " on an NVIDIA run: NCCL does not read HCCL settings",
            "use the NCCL_* equivalent", where, Severity::kWarning);
      }
      if (name == "CUDA_DEVICE_MAX_CONNECTIONS" && !a.value.unresolved) {
        if (!megatron_ && value == "1") {
          add(DiagCode::kEnvConflict, name,
              "CUDA_DEVICE_MAX_CONNECTIONS=1 with the FSDP strategy serializes communication "
              "behind compute "
              "(Megatron-Core needs it; FSDP's overlap suffers)",
              "unset it for FSDP runs", where, Severity::kWarning);
        } else if (megatron_ && value != "1" &&
                   (run_.layout.dims.tp > 1 || run_.layout.dims.cp > 1)) {
          add(DiagCode::kEnvConflict, name,
              "CUDA_DEVICE_MAX_CONNECTIONS=" + value +
                  " with Megatron TP=" + std::to_string(run_.layout.dims.tp) +
                  ": Megatron-Core requires 1 for sequence parallelism / TP communication overlap",
              "export CUDA_DEVICE_MAX_CONNECTIONS=1", where);
        }
      }
      if ((name == "CUDA_VISIBLE_DEVICES" || name == "ASCEND_RT_VISIBLE_DEVICES") &&
          !a.value.unresolved && !value.empty()) {
        // verl asks Ray for n_gpus_per_node devices per node (one placement-group bundle
        // each): extra visible devices stay idle. Too few fails at once: Ray registers only the
        // visible devices (its accelerator detection caps the count at them:
        // resolve_and_update_accelerator_resources, Ray 2.x), and verl's ResourcePoolManager
        // raises "Total available GPUs N is less than total desired GPUs M" before any worker
        // starts (verl/single_controller/ray/base.py _check_resource_available, b178a3cd).
        const auto count = 1 + std::count(value.begin(), value.end(), ',');
        if (count < run_.gpus_per_node) {
          add(DiagCode::kEnvConflict, name,
              name + "=" + value + " exposes " + std::to_string(count) +
                  " devices but trainer.n_gpus_per_node=" + std::to_string(run_.gpus_per_node) +
                  ": Ray registers only the visible devices and verl stops at start-up (\"Total "
                  "available GPUs ... is less than total desired GPUs\")",
              "make them agree", where);
        } else if (count > run_.gpus_per_node) {
          add(DiagCode::kEnvConflict, name,
              name + "=" + value + " exposes " + std::to_string(count) +
                  " devices; verl uses trainer.n_gpus_per_node=" +
                  std::to_string(run_.gpus_per_node) + " of them and leaves the rest idle",
              "raise n_gpus_per_node to use them, or list only the devices meant for this run",
              where, Severity::kInfo);
        }
      }
    }
  }

  const ParsedScript& script_;
  const ShellCommand& cmd_;
  std::size_t entry_;
  const ConfigSchema& schema_;
  const SourceProvider& provider_;
  const CheckOptions& options_;
  const std::map<std::string, ShellAssignment>& env_;
  CheckedRun run_;
  std::vector<Override> overrides_;
  std::map<std::string, std::size_t> by_key_;
  std::string config_name_;
  ClusterProfile cluster_;
  ModelSpec model_;
  WorkloadSpec workload_;
  bool have_model_ = false;
  bool megatron_ = false;
  bool micro_given_ = false;
};

}  // namespace

std::size_t CheckReport::errors() const {
  std::size_t n = 0;
  for (const auto& r : runs)
    for (const auto& d : r.diagnostics) n += d.severity == Severity::kError;
  return n;
}

std::size_t CheckReport::warnings() const {
  std::size_t n = 0;
  for (const auto& r : runs)
    for (const auto& d : r.diagnostics) n += d.severity == Severity::kWarning;
  return n;
}

std::string_view check_group(DiagCode code) {
  switch (code) {
    case DiagCode::kTpMismatch:
    case DiagCode::kWorldSizeMismatch:
    case DiagCode::kHeadsNotDivisible:
    case DiagCode::kKvHeadsNotDivisible:
    case DiagCode::kLayersNotDivisible:
    case DiagCode::kExpertsNotDivisible:
    case DiagCode::kTpCrossesNode:
    case DiagCode::kGroupSplit:
    case DiagCode::kBatchNotDivisible:
    case DiagCode::kInvalidSetting:
    case DiagCode::kUnevenPipeline:
      return "parallel";
    case DiagCode::kOomRisk:
    case DiagCode::kKvCacheShort:
    case DiagCode::kNoFeasiblePlan:
      return "memory";
    case DiagCode::kDtypeConflict:
      return "data-types";
    case DiagCode::kEnvConflict:
    case DiagCode::kEnvUnknown:
    case DiagCode::kUnknownKey:
    case DiagCode::kUnresolved:
      return "always";
  }
  return "always";
}

Result<CheckReport> check_script(const ParsedScript& script, const ConfigSchema& schema,
                                 const SourceProvider& provider, const CheckOptions& options) {
  CheckReport report;
  report.file = script.file;
  report.notes = script.notes;
  for (const auto& cmd : script.commands) {
    for (std::size_t i = 0; i < cmd.words.size(); ++i) {
      if (!is_entry_point(cmd.words[i].text)) continue;
      // The exported variables as the command starts, and its own prefix.
      std::map<std::string, ShellAssignment> env;
      if (cmd.exported) env = *cmd.exported;
      for (const auto& p : cmd.prefix) env[p.name] = p;
      RunChecker checker(script, cmd, i, schema, provider, options, env);
      GRPO_TRY(CheckedRun run, checker.run());
      report.runs.push_back(std::move(run));
      break;
    }
  }
  if (report.runs.empty()) {
    return make_error(ErrorKind::kParse,
                      "no verl entry point (python3 -m verl.trainer.main_ppo ...) found: not a "
                      "verl launch script",
                      {script.file, 0, 0});
  }
  return report;
}

}  // namespace grpo::core
