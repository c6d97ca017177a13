// A parallel layout for GRPO training: the actor's Megatron-Core parallelism, the rollout
// engine's tensor parallelism, micro batch, offload, recompute. Legality rules follow what the
// engines accept; each is cited in docs/parallelism.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grpo/core/cluster_profile.h"
#include "grpo/core/diagnostic.h"
#include "grpo/core/engine_versions.h"
#include "grpo/core/glossary.h"
#include "grpo/core/model_spec.h"
#include "grpo/core/workload.h"

namespace grpo::core {

enum class Recompute { kNone, kFull };
std::string_view to_string(Recompute r);
// Megatron's recompute_method with full recompute: `uniform` keeps the input of every group of
// recompute_num_layers layers, `block` recomputes the first recompute_num_layers layers of each
// stage and keeps the rest whole.
enum class RecomputeMethod { kUniform, kBlock };

struct Offload {
  bool params = false;     // verl megatron.param_offload
  bool grads = false;      // verl megatron.grad_offload
  bool optimizer = false;  // verl megatron.optimizer_offload (states return for each step)
  bool cpu_optimizer =
      false;  // Megatron-Core optimizer_cpu_offload: states live and update on the host
  double cpu_optimizer_fraction = 1.0;  // Megatron-Core optimizer_offload_fraction (of the states)
  bool any() const { return params || grads || optimizer || cpu_optimizer; }
  friend bool operator==(const Offload&, const Offload&) = default;
};
std::string to_string(const Offload& o);  // "none", "optimizer", "grads+optimizer", ...

// Which trainer runs the actor; each has its own memory model (estimate_memory in memory.h):
// Megatron-Core under verl (the default), verl's FSDP strategy (ZeRO-3 over every rank:
// estimate_fsdp_memory), or the embedded grpo-trainer (Megatron-Core's layouts with its own
// activations and generation, docs/memory-model.md).
enum class Backend { kMegatron, kFsdp, kEmbedded };
std::string_view to_string(Backend b);  // the --set backend= word: megatron, fsdp, embedded
std::optional<Backend> parse_backend(std::string_view word);

struct Layout {
  ParallelDims dims;
  int micro_batch = 1;  // responses per GPU per micro batch (ppo_micro_batch_size_per_gpu)
  int rollout_tp = 1;   // vLLM tensor-parallel size
  int ref_tp = 0;       // reference model TP; 0 means "same as the actor"
  int ref_pp = 0;       // reference model PP; 0 means "same as the actor"
  int rollout_dp = 1;   // verl rollout.data_parallel_size (part of one rollout replica)
  int rollout_pp = 1;   // verl rollout.pipeline_model_parallel_size
  int rollout_ep = 1;   // verl rollout.expert_parallel_size (> 1: vLLM expert parallelism)
  Offload offload;
  Recompute recompute = Recompute::kNone;
  RecomputeMethod recompute_method = RecomputeMethod::kUniform;
  int recompute_layers = 1;  // Megatron recompute_num_layers
  bool sequence_parallel = false;
  bool distributed_optimizer = true;
  Backend backend = Backend::kMegatron;
  // grpo-trainer generates with a whole-model copy on every rank (rollout TP 1 under TP or EP:
  // trainer/src/grpo_rollout.cpp whole_model_rollout), not at the training layout.
  bool embedded_whole_model_rollout() const {
    return backend == Backend::kEmbedded && rollout_tp == 1 && (dims.tp > 1 || dims.ep > 1);
  }
  int first_stage_layers = 0;  // Megatron num_layers_in_first_pipeline_stage; 0 = even split
  int last_stage_layers = 0;   // Megatron num_layers_in_last_pipeline_stage; 0 = even split
  bool split_counts_embedding = false;  // Megatron account_for_embedding_in_pipeline_split
  bool split_counts_loss = false;       // Megatron account_for_loss_in_pipeline_split
  int vpp = 0;  // Megatron virtual_pipeline_model_parallel_size; 0 = not set (verl's null)
  std::string pipeline_layout;        // Megatron pipeline_model_parallel_layout; empty = not set
  bool vision_data_parallel = false;  // vLLM mm_encoder_tp_mode=data (vision tower replicated)
  friend bool operator==(const Layout&, const Layout&) = default;
};

// Layer count of each pipeline stage (stage 0 first). Assumes the split is legal. With a
// pipeline_model_parallel_layout, each PP rank's decoder layers summed over its virtual stages.
std::vector<int> stage_layers(const ModelSpec& model, const Layout& layout);

// Values the user fixed with --set; everything unset is searched.
struct LayoutConstraints {
  std::optional<int> tp, pp, cp, dp, ep, etp, micro_batch, rollout_tp, ref_tp;
  std::optional<int> first_stage_layers, last_stage_layers;
  std::optional<bool> param_offload, grad_offload, optimizer_offload, cpu_optimizer;
  std::optional<bool> sequence_parallel, distributed_optimizer;
  std::optional<Recompute> recompute;
  // --set backend=...: with fsdp the planner searches micro batch, parameter / optimizer offload
  // and gradient checkpointing only (TP = PP = EP = ETP = 1); embedded (and what `grpo-launch
  // run` plans) searches the layouts grpo-trainer runs. Unset: Megatron-Core, or FSDP for a
  // family verl's Megatron worker cannot build.
  std::optional<Backend> backend;
  bool any() const;
};

// The --set keys that are layout settings (everything else is a profile field).
const std::vector<std::string>& layout_keys();
bool is_layout_key(std::string_view key);
// Applies one layout --set (key must satisfy is_layout_key). Errors: kInvalidValue.
Status apply_layout_setting(LayoutConstraints& c, std::string_view key, std::string_view value);

// Every rule the layout breaks, as diagnostics (empty when legal), under the rules of the given
// engine versions (docs/parallelism.md). Memory is not checked here. Each diagnostic's `setting`
// is a layout key ("tp", "rollout_tp", "vpp", "pipeline_layout", "micro_batch", ...).
std::vector<Diagnostic> check_legality(const ModelSpec& model, const ClusterProfile& cluster,
                                       const WorkloadSpec& workload, const Layout& layout,
                                       const EngineVersions& engines = {});

// The rollout engine's rules alone (R1-R8 in docs/parallelism.md): rollout TP x DP x PP against
// the world and the nodes, heads, KV heads, FFN, vocabulary, expert FFN and vision heads against
// rollout TP. check_legality includes them; the planner uses them to pick the rollout TP.
std::vector<Diagnostic> check_rollout_legality(const ModelSpec& model,
                                               const ClusterProfile& cluster, const Layout& layout,
                                               const EngineVersions& engines = {});

// Megatron-Core's pipeline_model_parallel_layout ("Ettt|(tt|)*29,m|L"), parsed as
// PipelineParallelLayerLayout.parse_str_to_list does: commas dropped, "(...)*n" and "x*n"
// unrolled, stages split at '|'. `error` is empty when every character is one of E, L, t, m.
struct PipelineLayout {
  std::string error;                // why the string is not a layout ("" when it is)
  std::vector<std::string> stages;  // each stage's layer characters, in order
  int count(char layer) const;      // occurrences of 'E', 'L', 't' or 'm' over all stages
};
PipelineLayout parse_pipeline_layout(std::string_view text);

// The first/last stage layer counts the plan sets when PP does not divide the layers
// (nullopt when no legal uneven split exists). Returns {0,0} when the split is even.
std::optional<std::pair<int, int>> uneven_split(int num_layers, int pp);

}  // namespace grpo::core
