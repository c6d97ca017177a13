// The verl run checker's state and phases (launcher/core/src/checker*.cpp), shared by the files
// that hold them: reading the overrides and settings (checker.cpp), the layout and its rules
// (checker_layout.cpp), memory (checker_memory.cpp) and the environment (checker_env.cpp).
// Internal to grpo_core: not installed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/cluster_profile.h"
#include "grpo/core/model_spec.h"
#include "grpo/core/verl_keys.h"
#include "grpo/core/workload.h"
#include "grpo/verl/checker.h"

namespace grpo::core::checker_detail {

inline const std::string A = "actor_rollout_ref.";
inline const std::string kTp = std::string(verl_key::kTp);
inline const std::string kPp = std::string(verl_key::kPp);
inline const std::string kCp = std::string(verl_key::kCp);
inline const std::string kEp = std::string(verl_key::kEp);
inline const std::string kEtp = std::string(verl_key::kEtp);
inline const std::string kSp = std::string(verl_key::kSequenceParallel);
inline const std::string kDistOpt = A + "actor.megatron.use_distributed_optimizer";
inline const std::string kTc = std::string(verl_key::kTransformerConfig);
inline const std::string kOptim = A + "actor.optim.override_optimizer_config.";
inline const std::string kRefTp = A + "ref.megatron.tensor_model_parallel_size";
inline const std::string kRefPp = A + "ref.megatron.pipeline_model_parallel_size";
inline const std::string kVpp = A + "actor.megatron.virtual_pipeline_model_parallel_size";
inline const std::string kPipelineLayout = kTc + "pipeline_model_parallel_layout";
inline const std::string kRemovePadding = A + "actor.megatron.use_remove_padding";
inline const std::string kUlysses = A + "actor.ulysses_sequence_parallel_size";
inline const std::string kRolloutDp = A + "rollout.data_parallel_size";
inline const std::string kRolloutPp = A + "rollout.pipeline_model_parallel_size";
inline const std::string kRolloutEp = A + "rollout.expert_parallel_size";
inline const std::string kMmEncoderTpMode = A + "rollout.engine_kwargs.vllm.mm_encoder_tp_mode";
inline const std::string kPrefixGrouper = A + "actor.use_prefix_grouper";
inline const std::string kBalanceBatch = "trainer.balance_batch";
inline const std::string kRolloutTp = std::string(verl_key::kRolloutTp);
inline const std::string kMicro = std::string(verl_key::kMicroBatch);
inline const std::string kMini = std::string(verl_key::kMiniBatch);
inline const std::string kTrainBatch = verl_key::kTrainBatchSize;
inline const std::string kModelPath = std::string(verl_key::kModelPath);
inline const std::string kStrategy = std::string(verl_key::kStrategy);

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

bool is_name_key(const std::string& key);
bool is_entry_point(const std::string& word);
std::string strip_model_suffixes(std::string s);
std::string last_component(std::string path);
std::optional<std::int64_t> parse_int(const std::string& v);
std::optional<double> parse_double(const std::string& v);

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
  Result<CheckedRun> run();

 private:
  SourceLocation at(const ShellWord& w) const;
  SourceLocation command_location() const;
  void add(DiagCode code, const std::string& setting, std::string message, std::string hint,
           SourceLocation where, std::optional<Severity> severity = std::nullopt);
  void read_overrides();
  const Override* find(const std::string& key) const;
  // A value the checker can use: set, resolved, and not a removal (~key).
  const Override* usable(const std::string& key) const;
  SourceLocation where_or_command(const std::string& key) const;
  std::int64_t int_setting(const std::string& key, std::int64_t fallback, std::int64_t min = 1);
  bool bool_setting(const std::string& key, bool fallback);
  double double_setting(const std::string& key, double fallback);
  std::string string_setting(const std::string& key, std::string fallback);
  void check_keys_and_values();
  Status resolve_model_and_cluster();
  // What decides the memory of the update besides the layout (docs/memory-model.md): how
  // micro batches are packed and capped, the log-prob path, LoRA, and the rollout engine's sleep.
  void read_memory_settings(WorkloadSpec& w);
  // verl's Megatron worker builds only some families (family_rules.h).
  void check_family();
  void build_layout();
  // Maps a planner setting name to the verl key that sets it.
  std::string key_for(const std::string& setting) const;
  void check_parallel();
  // verl >= 0.8 with use_prefix_grouper and balance_batch keeps each prompt's responses on one
  // rank and raises ValueError when the prompts do not divide over DP (ray_trainer.py
  // _balance_batch). Otherwise a split group is fine: advantages are computed on the driver.
  void check_group_split();
  void check_data_types();
  // verl's dynamic batch size packs whole sequences: a cap below one sequence is refused at the
  // first update (verl/utils/seqlen_balancing.py rearrange_micro_batches: "max_token_len must
  // be greater than the sequence length"). A sequence split over the Ulysses / CP group needs
  // the cap times that size.
  void check_token_caps();
  void check_memory();
  void check_environment();

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

}  // namespace grpo::core::checker_detail
