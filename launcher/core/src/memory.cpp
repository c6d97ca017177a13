#include "grpo/core/memory.h"

#include <algorithm>
#include <cmath>

#include "grpo/core/text.h"

namespace grpo::core {
namespace {

double weight_bytes(Dtype d) {
  return d == Dtype::kFp32 ? 4.0 : 2.0;
}
// fp32 logits-sized tensors alive at the peak of an unfused log-prob + loss forward/backward:
// 6.97 GiB measured above the inputs for [4096, 151936] (the earlier Python/LibTorch run in
// bench/kernels/RESULTS.md), of which 1.19 GiB are the inputs' gradients (counted elsewhere):
// (6.97 - 1.19) / 2.32 GiB = 2.5 copies. The later run there peaked at 9.29 GiB (3.5 copies);
// docs/memory-model.md, "Logits".
constexpr double kLogitsCopies = 2.5;
// fp32 main gradients in both cases (Megatron accumulates and reduces grads in fp32).
constexpr double kGradBytes = 4.0;
// Adam: fp32 master weights + two fp32 moments with mixed precision; moments only in fp32.
double optimizer_bytes(Dtype d) {
  return d == Dtype::kFp32 ? 8.0 : 12.0;
}

// Activation bytes stored per token for one layer (bf16 values, flash attention, no dropout).
// `tp_h` divides the hidden-size terms (tp with sequence parallel, else 1); `tp` divides the
// head / FFN terms.
struct LayerActivation {
  double dense = 0;  // a dense layer
  double moe = 0;    // an MoE layer
  double input = 0;  // the layer input alone (what full recompute keeps)
};

LayerActivation layer_activation_per_token(const ModelSpec& m, const Layout& l) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.q_width());
  const double kv = static_cast<double>(m.kv_width());
  const double tp = l.dims.tp;
  const double tp_h = l.sequence_parallel ? tp : 1.0;
  // Attention: norm input + norm output (QKV input) [hidden terms]; q, k, v and the attention
  // output (o-proj input) [split by TP]; flash-attention softmax statistics, fp32 per head.
  const double attention = 2.0 * 2.0 * h / tp_h + 2.0 * (q + 2.0 * kv + q) / tp +
                           4.0 * static_cast<double>(m.num_attention_heads) / tp;
  // Dense SwiGLU: norm input + norm output [hidden]; gate, up and their product [split by TP].
  const double f = static_cast<double>(m.ffn_hidden_size);
  const double dense_mlp = 2.0 * 2.0 * h / tp_h + 2.0 * 3.0 * f / tp;
  LayerActivation a;
  a.dense = attention + dense_mlp;
  a.input = 2.0 * h / tp_h;
  if (m.is_moe()) {
    const double k = static_cast<double>(m.experts_per_token);
    const double fe = static_cast<double>(m.moe_ffn_hidden_size);
    const double fs = static_cast<double>(m.shared_expert_ffn_hidden_size);
    const double e = static_cast<double>(m.num_experts);
    // Tokens reach the experts from the sequence-parallel shard: k copies per token, each with
    // its permuted input and output [hidden] and gate/up/product [split by ETP]; router logits
    // and probabilities in fp32; shared experts like a dense SwiGLU.
    const double routed = k * (2.0 * 2.0 * h + 2.0 * 3.0 * fe / l.dims.etp) / tp_h;
    const double router = 2.0 * 4.0 * e / tp_h;
    const double shared = static_cast<double>(m.num_shared_experts) * 2.0 * 3.0 * fs / tp;
    a.moe = attention + 2.0 * 2.0 * h / tp_h + routed + router + shared;
  }
  return a;
}

}  // namespace

double PhaseMemory::total() const {
  double t = 0;
  for (const auto& i : items) t += i.bytes;
  return t;
}

double PhaseMemory::bytes(std::string_view item) const {
  for (const auto& i : items) {
    if (i.name == item) return i.bytes;
  }
  return 0;
}

const PhaseMemory& MemoryEstimate::worst() const {
  return rollout.total() - rollout.capacity > training.total() - training.capacity ? rollout
                                                                                   : training;
}

double runtime_overhead_bytes(DeviceVendor vendor) {
  switch (vendor) {
    case DeviceVendor::kNvidia:
      return 2.0 * kGiB;
    case DeviceVendor::kAscend:
      return 3.0 * kGiB;
    case DeviceVendor::kCpu:
      return 0.5 * kGiB;
  }
  return 2.0 * kGiB;
}

ShardedParams sharded_params(const ModelSpec& m, const Layout& l) {
  const double tp = l.dims.tp;
  const double h = static_cast<double>(m.hidden_size);
  const double attention = static_cast<double>(attention_params_per_layer(m)) / tp;
  const double norms = 2.0 * h;  // replicated in every TP rank
  const double dense_layer =
      attention + norms + static_cast<double>(swiglu_params(m.hidden_size, m.ffn_hidden_size)) / tp;
  double moe_non_expert = 0;
  double moe_expert = 0;
  if (m.is_moe()) {
    moe_non_expert =
        attention + norms + h * static_cast<double>(m.num_experts) +
        static_cast<double>(m.num_shared_experts *
                            swiglu_params(m.hidden_size, m.shared_expert_ffn_hidden_size)) /
            tp +
        (m.num_shared_experts > 0 && m.shared_expert_gate ? h : 0.0);
    moe_expert = static_cast<double>(m.num_experts) *
                 static_cast<double>(swiglu_params(m.hidden_size, m.moe_ffn_hidden_size)) /
                 (static_cast<double>(l.dims.ep) * l.dims.etp);
  }
  const double vocab = static_cast<double>(m.vocab_size) * h / tp;
  const std::vector<int> stages = stage_layers(m, l);
  ShardedParams worst;
  int layer = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    ShardedParams p;
    p.stage = static_cast<int>(s);
    for (int i = 0; i < stages[s]; ++i, ++layer) {
      const bool moe = m.is_moe() && layer >= m.first_k_dense_layers;
      p.non_expert += moe ? moe_non_expert : dense_layer;
      p.expert += moe ? moe_expert : 0.0;
    }
    if (s == 0) p.non_expert += vocab + static_cast<double>(m.vision.params) / tp;
    if (s + 1 == stages.size()) {
      // The output layer; with tied embeddings and PP > 1 the last stage keeps its own copy.
      if (!m.tied_embeddings || stages.size() > 1) p.non_expert += vocab;
      p.non_expert += h;  // final norm
    }
    if (p.total() > worst.total()) worst = p;
  }
  return worst;
}

RolloutMemory estimate_rollout_memory(const ModelSpec& m, const ClusterProfile& c,
                                      const WorkloadSpec& w, int rollout_tp) {
  RolloutMemory r;
  r.rollout_tp = rollout_tp;
  const double wb = weight_bytes(w.dtype);
  const double device_bytes = c.device.memory_gib * kGiB;
  const ParamCounts counts = count_params(m);
  const double rtp = rollout_tp;
  r.weights = wb * static_cast<double>(counts.total()) / rtp;
  r.budget = device_bytes * w.gpu_memory_utilization;
  // KV heads are split over rollout TP, or replicated (one per device) when TP exceeds them.
  const double kv_heads = std::ceil(static_cast<double>(m.num_kv_heads) / rtp);
  r.kv_bytes_per_token =
      2.0 * static_cast<double>(m.num_layers) * kv_heads * static_cast<double>(m.head_dim) * wb;
  const double replicas = static_cast<double>(c.world_size()) / rtp;
  const double seqs = std::ceil(static_cast<double>(w.responses_per_step()) / replicas);
  r.concurrent_seqs =
      static_cast<std::int64_t>(std::min(seqs, static_cast<double>(w.max_num_seqs)));
  const double seq_len = static_cast<double>(w.seq_length());
  r.kv_needed = static_cast<double>(r.concurrent_seqs) * seq_len * r.kv_bytes_per_token;
  // Profiling workspace: one forward of 8192 batched tokens plus full-vocabulary fp32 logits
  // for the running sequences.
  const double ffn_eff =
      m.is_moe() ? static_cast<double>(m.experts_per_token * m.moe_ffn_hidden_size +
                                       m.num_shared_experts * m.shared_expert_ffn_hidden_size)
                 : static_cast<double>(m.ffn_hidden_size);
  r.workspace = 8192.0 * (6.0 * static_cast<double>(m.hidden_size) + 3.0 * ffn_eff / rtp) * wb +
                static_cast<double>(std::min<std::int64_t>(r.concurrent_seqs, 8192)) *
                    static_cast<double>(m.vocab_size) * 4.0;
  r.kv_capacity = std::max(0.0, r.budget - r.weights - r.workspace);
  const double needed = r.weights + r.workspace + seq_len * r.kv_bytes_per_token;
  r.weights_fit = needed <= r.budget;
  r.utilization_needed = device_bytes > 0 ? needed / device_bytes : 0;
  return r;
}

namespace {

// Activations and logits of one micro batch with TP = 1 (the FSDP strategy).
std::pair<double, double> unsplit_activations(const ModelSpec& m, const WorkloadSpec& w,
                                              const Layout& l) {
  const double tokens = static_cast<double>(l.micro_batch) * static_cast<double>(w.seq_length());
  const LayerActivation act = layer_activation_per_token(m, l);
  double full = 0;
  double one_layer = 0;
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    const bool moe = m.is_moe() && i >= m.first_k_dense_layers;
    const double per = (moe ? act.moe : act.dense) * tokens;
    full += per;
    one_layer = std::max(one_layer, per);
  }
  const double activations =
      l.recompute == Recompute::kFull
          ? act.input * tokens * static_cast<double>(m.num_layers) + one_layer
          : full;
  const double vocab = static_cast<double>(m.vocab_size);
  const double logits = w.fused_logprob ? tokens * std::min(vocab, 16384.0) * 4.0
                                        : kLogitsCopies * tokens * vocab * 4.0;
  return {activations, logits};
}

}  // namespace

// verl's FSDP strategy: parameters, gradients and Adam states sharded over every rank (ZeRO-3)
// with fp32 master weights; each layer's bf16 weights are gathered while it runs (two layers
// in flight with prefetch). Offload keeps the shards on the host.
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
  const double gathered = 2.0 * 2.0 * std::max(layer, static_cast<double>(counts.embedding));
  est.actor.non_expert = total / shards;
  // verl's update_actor loads offloaded parameters, gradients and optimizer states back
  // (fsdp_workers.py), so offload only frees them outside the update. The FSDP reference model
  // always lives on the host (CPU offload) and is not counted on the device.
  const double shard = 4.0 * total / shards;
  const double weights = shard + gathered;
  const double grads = shard + gathered;
  const double opt = 8.0 * total / shards;
  const double ref = 0.0;
  const auto [activations, logits] = unsplit_activations(m, w, l);
  est.training.phase = "training";
  est.training.capacity = capacity;
  est.training.items = {
      {"actor weights", weights},    {"actor gradients", grads}, {"actor optimizer states", opt},
      {"activations", activations},  {"logits", logits},         {"reference weights", ref},
      {"runtime overhead", overhead}};
  est.engine = estimate_rollout_memory(m, c, w, l.rollout_tp);
  const RolloutMemory& r = est.engine;
  est.rollout.phase = "rollout";
  est.rollout.capacity = capacity;
  est.rollout.items = {{"actor weights", l.offload.params ? 0.0 : shard},
                       {"actor gradients", 0.0},
                       {"actor optimizer states", l.offload.optimizer ? 0.0 : opt},
                       {"reference weights", ref},
                       {"rollout weights", r.weights},
                       {"rollout workspace", r.workspace},
                       {"KV cache", r.kv_capacity},
                       {"runtime overhead", overhead}};
  return est;
}

MemoryEstimate estimate_memory(const ModelSpec& m, const ClusterProfile& c, const WorkloadSpec& w,
                               const Layout& l) {
  MemoryEstimate est;
  const double device_bytes = c.device.memory_gib * kGiB;
  const double capacity = device_bytes * (1.0 - w.memory_headroom);
  const double overhead = runtime_overhead_bytes(c.device.vendor);
  const double wb = weight_bytes(w.dtype);
  const ParallelDims& d = l.dims;
  const double world = c.world_size();

  // --- Actor parameters, gradients, optimizer states on the worst stage.
  est.actor = sharded_params(m, l);
  const ShardedParams& p = est.actor;
  const double dp_shards = static_cast<double>(d.dp) * d.cp;
  const double edp = std::max(1.0, world / (static_cast<double>(d.etp) * d.ep * d.pp));
  const double weights = wb * p.total();
  const double grads = kGradBytes * p.total();
  const double opt = l.offload.cpu_optimizer ? 0.0
                     : l.distributed_optimizer
                         ? optimizer_bytes(w.dtype) * (p.non_expert / dp_shards + p.expert / edp)
                         : optimizer_bytes(w.dtype) * p.total();
  const double ref_weights = w.use_kl_loss ? weights : 0.0;

  if (l.fsdp) return estimate_fsdp_memory(m, c, w, l);

  // --- Activations for one micro batch, on each stage, with the 1F1B in-flight count.
  const double tokens =
      static_cast<double>(l.micro_batch) * static_cast<double>(w.seq_length()) / d.cp;
  const LayerActivation act = layer_activation_per_token(m, l);
  const std::int64_t per_rank = w.ppo_mini_batch_size * w.rollout_n / std::max(1, d.dp);
  const std::int64_t micro_batches =
      std::max<std::int64_t>(1, per_rank / std::max(1, l.micro_batch));
  const std::vector<int> stages = stage_layers(m, l);
  double activations = 0;
  double logits = 0;
  int layer = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const double in_flight = static_cast<double>(
        std::min<std::int64_t>(static_cast<std::int64_t>(stages.size() - s), micro_batches));
    double stage_full = 0;
    double one_layer_max = 0;
    for (int i = 0; i < stages[s]; ++i, ++layer) {
      const bool moe = m.is_moe() && layer >= m.first_k_dense_layers;
      const double per = (moe ? act.moe : act.dense) * tokens;
      stage_full += per;
      one_layer_max = std::max(one_layer_max, per);
    }
    double stage_act = l.recompute == Recompute::kFull
                           ? act.input * tokens * stages[s] * in_flight + one_layer_max
                           : stage_full * in_flight;
    double stage_logits = 0;
    if (s + 1 == stages.size()) {
      // b*s*V fp32 logits, their log-softmax and the gradient (kLogitsCopies alive at once);
      // a fused log-prob kernel holds one vocabulary chunk instead.
      const double vocab = static_cast<double>(m.vocab_size) / d.tp;
      stage_logits = w.fused_logprob ? tokens * std::min(vocab, 16384.0) * 4.0
                                     : kLogitsCopies * tokens * vocab * 4.0;
    }
    if (stage_act + stage_logits > activations + logits) {
      activations = stage_act;
      logits = stage_logits;
    }
  }

  est.training.phase = "training";
  est.training.capacity = capacity;
  // verl's offload moves state off the device between phases, not within one: for the update
  // the actor's weights, gradients and optimizer states are all loaded back (megatron_workers
  // update_actor); an offloaded reference stays on the host while the actor trains.
  // Megatron-Core's CPU optimizer keeps the states (and fp32 master weights) on the host.
  est.training.phase = "training";
  est.training.capacity = capacity;
  est.training.items = {
      {"actor weights", weights},
      {"actor gradients", grads},
      {"actor optimizer states", opt},
      {"activations", activations},
      {"logits", logits},
      {"reference weights", l.offload.params ? 0.0 : ref_weights},
      {"runtime overhead", overhead},
  };

  // --- Rollout: the engine's allocation on top of the actor state that stays resident.
  est.engine = estimate_rollout_memory(m, c, w, l.rollout_tp);
  const RolloutMemory& r = est.engine;
  est.rollout.phase = "rollout";
  est.rollout.capacity = capacity;
  est.rollout.items = {
      {"actor weights", l.offload.params ? 0.0 : weights},
      {"actor gradients", l.offload.params ? 0.0 : grads},
      {"actor optimizer states", l.offload.optimizer ? 0.0 : opt},
      {"reference weights", l.offload.params ? 0.0 : ref_weights},
      {"rollout weights", r.weights},
      {"rollout workspace", r.workspace},
      {"KV cache", r.kv_capacity},
      {"runtime overhead", overhead},
  };
  return est;
}

}  // namespace grpo::core
