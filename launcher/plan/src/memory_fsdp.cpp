// verl's FSDP strategy (docs/memory-model.md, "FSDP"): parameters, gradients and Adam states
// sharded over every rank (ZeRO-3) with fp32 master weights; each layer's bf16 weights are
// gathered while it runs (two layers in flight with prefetch). Ulysses sequence parallelism
// splits every sequence over ulysses_sequence_parallel_size ranks (the FSDP layout carries it
// as its CP). With LoRA the frozen base weights are sharded in
// the model dtype and only the adapters have fp32 weights, gradients and Adam states.
#include <algorithm>

#include "grpo/core/text.h"
#include "grpo/plan/memory.h"
#include "memory_terms.h"

namespace grpo::core {

MemoryEstimate estimate_fsdp_memory(const ModelSpec& m, const ClusterProfile& c,
                                    const WorkloadSpec& w, const Layout& l) {
  MemoryEstimate est;
  const double device_bytes = c.device.memory_gib * kGiB;
  const double capacity = device_bytes * (1.0 - w.memory_headroom);
  const double overhead = runtime_overhead_bytes(c.device.vendor);
  const ParamCounts counts = count_params(m);
  const double total = static_cast<double>(counts.total());
  const double shards = std::max(1, l.dims.world_size());
  const double layer = static_cast<double>(
      attention_params_per_layer(m) +
      (m.is_moe() ? moe_params_per_layer(m) : swiglu_params(m.hidden_size, m.ffn_hidden_size)));
  const double wb = memory_terms::weight_bytes(w.dtype);
  const double gathered = 2.0 * wb * std::max(layer, static_cast<double>(counts.embedding));
  est.actor.non_expert = total / shards;

  double weights = 0, grads = 0, opt = 0, resident = 0;
  if (w.lora.active()) {
    const double adapters = lora_params(m, w.lora) / shards;
    weights = wb * total / shards + gathered + 4.0 * adapters;
    grads = memory_terms::kGradBytes * adapters;
    opt = 8.0 * adapters;
    resident = wb * total / shards + 4.0 * adapters;
  } else {
    // verl's update_actor loads offloaded parameters, gradients and optimizer states back
    // (fsdp_workers.py), so offload only frees them outside the update.
    const double shard = 4.0 * total / shards;
    weights = shard + gathered;
    grads = shard + gathered;
    opt = 8.0 * total / shards;
    resident = shard;
  }

  // Activations and logits of one micro batch, each sequence split over the Ulysses group.
  // gradient checkpointing (verl's default) keeps each layer's input and recomputes one layer.
  const bool grouped = memory_terms::prefix_grouper_applies(w, l.dims.cp);
  const memory_terms::TokenRange tokens = grouped
                                              ? memory_terms::prefix_grouper_tokens(w, l)
                                              : memory_terms::micro_batch_tokens(w, l, l.dims.cp);
  const memory_terms::LayerActivation act = memory_terms::layer_activation_per_token(m, l);
  const LogprobPath path = memory_terms::logprob_path(w, false);
  const auto act_at = [&](double t) {
    return memory_terms::stage_activations(m, l, act, 0, static_cast<int>(m.num_layers), t, 1.0);
  };
  // `responses`: the positions whose log-probs are taken (the grouper's split rows; else all).
  const auto logits_at = [&](double t, double responses) {
    const double vocab = static_cast<double>(m.vocab_size);
    return grouped ? memory_terms::prefix_grouper_logits_bytes(t, responses, vocab)
                   : memory_terms::logits_bytes(path, t, vocab);
  };
  est.engine = estimate_rollout_memory(m, c, w, l.rollout_tp, l.rollout_ep);
  const RolloutMemory& r = est.engine;
  // The FSDP reference model always lives on the host (CPU offload) and is not counted; with
  // LoRA it is the actor itself.
  est.training.phase = "training";
  est.training.capacity = capacity;
  est.training.items = {MemoryItem::fixed("actor weights", weights),
                        MemoryItem::fixed("actor gradients", grads),
                        MemoryItem::fixed("actor optimizer states", opt),
                        {"activations", act_at(tokens.worst), act_at(tokens.floor)},
                        {"logits", logits_at(tokens.worst, tokens.grouped_responses),
                         logits_at(tokens.floor, tokens.floor)},
                        MemoryItem::fixed("reference weights", 0.0),
                        MemoryItem::fixed("runtime overhead", overhead)};
  if (!w.free_cache_engine) {
    est.training.items.push_back(MemoryItem::fixed("rollout engine (kept)", r.budget));
  }
  est.rollout.phase = "rollout";
  est.rollout.capacity = capacity;
  est.rollout.items = {MemoryItem::fixed("actor weights", l.offload.params ? 0.0 : resident),
                       MemoryItem::fixed("actor gradients", 0.0),
                       MemoryItem::fixed("actor optimizer states", l.offload.optimizer ? 0.0 : opt),
                       MemoryItem::fixed("reference weights", 0.0),
                       MemoryItem::fixed("rollout weights", r.weights),
                       MemoryItem::fixed("rollout workspace", r.workspace),
                       MemoryItem::fixed("KV cache", r.kv_capacity),
                       MemoryItem::fixed("runtime overhead", overhead)};
  apply_sglang_static_memory(est, w, c.device.memory_gib * kGiB,
                             static_cast<double>(w.seq_length()));
  apply_engine_worker_offload(est, w);
  return est;
}

}  // namespace grpo::core
