// Per-device memory estimate of a GRPO layout, by phase, with a breakdown. The formulas (mixed-
// precision Adam bytes per parameter, distributed-optimizer sharding, activations after
// Korthikanti et al. 2022 adapted to Qwen's shapes, KV cache, logits) are written down in
// docs/memory-model.md; tests check them against numbers worked out by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/cluster_profile.h"
#include "grpo/core/model_spec.h"
#include "grpo/core/workload.h"
#include "grpo/plan/layout.h"

namespace grpo::core {

// One item of a phase with two figures (docs/memory-model.md, "Floor and worst case"):
//   bytes  the worst case: every sequence at its maximum length, every micro batch full;
//   floor  what is resident whatever the data: weights, gradients and optimizer states as
//          placed, and the smallest activation footprint the settings allow.
// For state that does not depend on the data the two are equal.
struct MemoryItem {
  std::string name;  // "actor weights", "activations", "logits", ...
  double bytes = 0;
  double floor = 0;
  static MemoryItem fixed(std::string name, double bytes) {
    return {std::move(name), bytes, bytes};
  }
};

struct PhaseMemory {
  std::string phase;  // "rollout" or "training"
  std::vector<MemoryItem> items;
  double capacity = 0;         // usable device memory in bytes (device memory minus the headroom)
  double total() const;        // the worst case
  double floor_total() const;  // the floor
  double bytes(std::string_view item) const;  // worst case of one item, 0 when absent
  double floor(std::string_view item) const;  // floor of one item, 0 when absent
  bool fits() const { return total() <= capacity; }
  bool floor_fits() const { return floor_total() <= capacity; }
};

// Parameters held by one device of the worst (largest) pipeline stage.
struct ShardedParams {
  double non_expert = 0;  // replicated across EP; optimizer sharded over DP x CP
  double expert = 0;      // routed experts; optimizer sharded over EDP
  // Of non_expert: replicated in every TP rank and fed by the rank's own token rows under
  // sequence parallelism (layer and final norms, MoE router and shared-expert gate), so their
  // gradients are summed over the TP ranks too (Megatron-Core: finalize_model_grads' layernorm
  // all-reduce for sequence parallelism).
  double sequence_partial = 0;
  int stage = 0;  // which pipeline stage this is
  double total() const { return non_expert + expert; }
};

// The rollout engine's own memory at a given rollout TP (independent of the actor layout).
struct RolloutMemory {
  int rollout_tp = 1;
  double weights = 0;                // engine weights per device
  double budget = 0;                 // device memory x gpu_memory_utilization
  double workspace = 0;              // profiling forward + sampling logits
  double kv_bytes_per_token = 0;     // per device
  double kv_needed = 0;              // KV cache for every concurrent sequence
  double kv_capacity = 0;            // what the budget leaves for the KV cache
  std::int64_t concurrent_seqs = 0;  // sequences one replica runs at once
  bool weights_fit = true;           // weights + workspace + one sequence fit in the budget
  // The gpu_memory_utilization at which weights_fit would hold.
  double utilization_needed = 0;
};

// The rollout engine at `rollout_tp` and, with vLLM's / SGLang's expert parallelism
// (rollout.expert_parallel_size = rollout TP x rollout DP, verl/workers/config/rollout.py
// RolloutConfig; vllm_async_server.py passes enable_expert_parallel and data_parallel_size),
// `rollout_ep`: the routed experts are split over the EP ranks, everything else over TP.
RolloutMemory estimate_rollout_memory(const ModelSpec& model, const ClusterProfile& cluster,
                                      const WorkloadSpec& workload, int rollout_tp,
                                      int rollout_ep = 1);

struct MemoryEstimate {
  PhaseMemory rollout;   // generation: resident actor state + the engine's budget
  PhaseMemory training;  // the policy update: forward, backward and optimizer step
  ShardedParams actor;   // actor parameters on the worst stage's device
  RolloutMemory engine;  // the rollout engine at the layout's rollout TP
  // grpo-trainer's plans (Layout::embedded_trainer): the sequences it generates at once, the
  // most (up to its rows and the workload's max_num_seqs) whose KV cache and prefill fit beside
  // the resident state; grpo-launch passes it as actor_rollout_ref.rollout.max_num_seqs.
  std::int64_t embedded_rollout_seqs = 0;
  bool fits() const { return rollout.fits() && training.fits() && engine.weights_fit; }
  // The run cannot start or cannot train whatever the data (OOM_RISK is an error).
  bool floor_fits() const {
    return rollout.floor_fits() && training.floor_fits() && engine.weights_fit;
  }
  // The phase that is over capacity by the largest margin (the training phase when all fit).
  const PhaseMemory& worst() const;
  // The phase a report names and a fix addresses: the phase whose floor does not fit (the
  // rollout's when the training floor fits), else the worst (a worst case of another phase may
  // overshoot more, but a floor that does not fit is what stops the run).
  const PhaseMemory& limiting() const;
};

// SGLang's static memory (rollout.name=sglang): mem_fraction_static (gpu_memory_utilization) is a
// share of the whole device, and the KV pool gets what of it is free after the weights load:
// rest = free after load - total x (1 - fraction) (sglang v0.5.8
// python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py profile_max_num_token). What
// the actor keeps resident during the rollout is inside the fraction, not on top of it: the KV
// cache of `est.rollout` becomes fraction x device - resident - rollout weights (at least 0), and
// the engine cannot start (weights_fit false) when that leaves no room for one sequence.
// vLLM's gpu_memory_utilization is not shared so, and nothing changes for it.
void apply_sglang_static_memory(MemoryEstimate& est, const WorkloadSpec& w, double device_bytes,
                                double seq_length);

// verl's model-engine worker (trainer.use_legacy_worker_impl=disable) moves the actor's model
// (parameters and, for Megatron, gradient buffers) to the host after every weight sync, whatever
// param_offload says, before the KV cache resumes (verl engine_workers.py
// ActorRolloutRefWorker.update_weights step 3, `engine.to("cpu", model=True, optimizer=False)`);
// the optimizer states stay unless optimizer_offload. The legacy workers keep the model on the
// device unless param_offload (fsdp_workers.py / megatron_workers.py rollout_mode). Called after
// apply_sglang_static_memory: SGLang sized its pool while the model was still resident.
void apply_engine_worker_offload(MemoryEstimate& est, const WorkloadSpec& w);

// Fixed runtime overhead per device (CUDA/CANN context, communicator buffers, fragmentation).
double runtime_overhead_bytes(DeviceVendor vendor);

ShardedParams sharded_params(const ModelSpec& model, const Layout& layout);

// Trainable LoRA parameters of the whole model for `lora` (0 without LoRA): rank x (in + out)
// for every targeted projection of every layer (routed and shared experts included when their
// projections are targeted).
double lora_params(const ModelSpec& model, const LoraSpec& lora);

// The estimate for `layout`, by its backend's memory model: Megatron-Core with a rollout engine,
// verl's FSDP strategy (estimate_fsdp_memory) or grpo-trainer (docs/memory-model.md).
MemoryEstimate estimate_memory(const ModelSpec& model, const ClusterProfile& cluster,
                               const WorkloadSpec& workload, const Layout& layout);
MemoryEstimate estimate_fsdp_memory(const ModelSpec& model, const ClusterProfile& cluster,
                                    const WorkloadSpec& workload, const Layout& layout);

// The longest response (<= workload.max_response_length) for which the training phase's worst
// case fits; nullopt when even a one-token response does not. Used to say where a layout whose
// floor fits stops fitting.
std::optional<std::int64_t> longest_fitting_response(const ModelSpec& model,
                                                     const ClusterProfile& cluster,
                                                     const WorkloadSpec& workload,
                                                     const Layout& layout);

}  // namespace grpo::core
