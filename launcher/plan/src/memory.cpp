#include "grpo/plan/memory.h"

#include <algorithm>
#include <cmath>

#include "grpo/core/text.h"
#include "memory_terms.h"

namespace grpo::core {

using memory_terms::kGradBytes;
using memory_terms::optimizer_bytes;
using memory_terms::weight_bytes;

double PhaseMemory::total() const {
  double t = 0;
  for (const auto& i : items) t += i.bytes;
  return t;
}

double PhaseMemory::floor_total() const {
  double t = 0;
  for (const auto& i : items) t += i.floor;
  return t;
}

double PhaseMemory::bytes(std::string_view item) const {
  for (const auto& i : items) {
    if (i.name == item) return i.bytes;
  }
  return 0;
}

double PhaseMemory::floor(std::string_view item) const {
  for (const auto& i : items) {
    if (i.name == item) return i.floor;
  }
  return 0;
}

const PhaseMemory& MemoryEstimate::worst() const {
  return rollout.total() - rollout.capacity > training.total() - training.capacity ? rollout
                                                                                   : training;
}

const PhaseMemory& MemoryEstimate::limiting() const {
  if (!rollout.floor_fits() && training.floor_fits()) return rollout;
  if (!training.floor_fits()) return training;
  return worst();
}

void apply_sglang_static_memory(MemoryEstimate& est, const WorkloadSpec& w, double device_bytes,
                                double seq_length) {
  if (!w.rollout_sglang) return;
  double resident = 0;
  for (const auto& i : est.rollout.items) {
    if (i.name.rfind("actor ", 0) == 0 || i.name == "reference weights") resident += i.bytes;
  }
  const double fraction = device_bytes * w.gpu_memory_utilization;
  const double kv = std::max(0.0, fraction - resident - est.engine.weights);
  for (auto& i : est.rollout.items) {
    if (i.name == "KV cache") i.bytes = i.floor = kv;
  }
  est.engine.kv_capacity = kv;
  est.engine.weights_fit = kv >= seq_length * est.engine.kv_bytes_per_token;
}

void apply_engine_worker_offload(MemoryEstimate& est, const WorkloadSpec& w) {
  if (!w.engine_worker) return;
  for (auto& i : est.rollout.items) {
    if (i.name == "actor weights" || i.name == "actor gradients") i.bytes = i.floor = 0;
  }
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
  // Qwen3's q/k norms (head_dim each) are replicated in every TP rank, like the layer norms
  // (Megatron-Core's q_layernorm / k_layernorm; the embedded trainer holds them so too); so are
  // MLA's down projections (attention_replicated_params_per_layer).
  const double replicated = static_cast<double>(attention_replicated_params_per_layer(m));
  const double attention =
      (static_cast<double>(attention_params_per_layer(m)) - replicated) / tp + replicated;
  const double norms = static_cast<double>(norm_params_per_layer(m));  // replicated in every rank
  const double dense_layer =
      attention + norms + static_cast<double>(swiglu_params(m.hidden_size, m.ffn_hidden_size)) / tp;
  double moe_non_expert = 0;
  double moe_expert = 0;
  const double router = static_cast<double>(router_params_per_layer(m));
  const double router_and_gate =
      m.is_moe() ? router + (m.num_shared_experts > 0 && m.shared_expert_gate ? h : 0.0) : 0.0;
  if (m.is_moe()) {
    moe_non_expert =
        attention + norms + router +
        static_cast<double>(m.num_shared_experts *
                            swiglu_params(m.hidden_size, m.shared_expert_ffn_hidden_size)) /
            tp +
        (m.num_shared_experts > 0 && m.shared_expert_gate ? h : 0.0);
    moe_expert = static_cast<double>(m.num_experts) * static_cast<double>(expert_params(m)) /
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
      p.sequence_partial += norms + (moe ? router_and_gate : 0.0);
    }
    if (s == 0) p.non_expert += vocab + static_cast<double>(m.vision.params) / tp;
    if (s + 1 == stages.size()) {
      // The output layer; with tied embeddings and PP > 1 the last stage keeps its own copy.
      if (!m.tied_embeddings || stages.size() > 1) p.non_expert += vocab;
      p.non_expert += h;  // final norm
      p.sequence_partial += h;
    }
    if (p.total() > worst.total()) worst = p;
  }
  return worst;
}

namespace {

bool all_linear(const LoraSpec& lora) {
  return std::find(lora.targets.begin(), lora.targets.end(), "all-linear") != lora.targets.end();
}

// Whether any of `names` (Hugging Face or Megatron module names) gets an adapter.
bool targets(const LoraSpec& lora, std::initializer_list<const char*> names) {
  if (all_linear(lora)) return true;
  for (const auto& t : lora.targets) {
    for (const char* n : names) {
      if (t == n) return true;
    }
  }
  return false;
}

}  // namespace

double lora_params(const ModelSpec& m, const LoraSpec& lora) {
  if (!lora.active()) return 0;
  const double r = lora.rank;
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.q_width());
  const double kv = static_cast<double>(m.kv_width());
  const double v = static_cast<double>(m.v_width());
  const double o = static_cast<double>(m.o_width());
  // An adapter on a projection in -> out adds A [r, in] and B [out, r].
  const auto adapter = [r](double in, double out) { return r * (in + out); };
  const auto swiglu = [&](double f) {
    double n = 0;
    if (targets(lora, {"gate_proj", "linear_fc1"})) n += adapter(h, f);
    if (targets(lora, {"up_proj", "linear_fc1"})) n += adapter(h, f);
    if (targets(lora, {"down_proj", "linear_fc2"})) n += adapter(f, h);
    return n;
  };
  double attention = 0;
  if (targets(lora, {"q_proj", "linear_qkv"})) attention += adapter(h, q);
  if (targets(lora, {"k_proj", "linear_qkv"})) attention += adapter(h, kv);
  if (targets(lora, {"v_proj", "linear_qkv"})) attention += adapter(h, v);
  if (targets(lora, {"o_proj", "linear_proj"})) attention += adapter(o, h);
  const double dense_layer = attention + swiglu(static_cast<double>(m.ffn_hidden_size));
  double moe_layer = attention;
  if (m.is_moe()) {
    moe_layer +=
        static_cast<double>(m.num_experts) * swiglu(static_cast<double>(m.moe_ffn_hidden_size));
    moe_layer += static_cast<double>(m.num_shared_experts) *
                 swiglu(static_cast<double>(m.shared_expert_ffn_hidden_size));
    // The router is a linear layer too ("all-linear" includes it).
    if (all_linear(lora)) moe_layer += adapter(h, static_cast<double>(m.num_experts));
  }
  return static_cast<double>(m.dense_layers()) * dense_layer +
         static_cast<double>(m.moe_layers()) * moe_layer;
}

RolloutMemory estimate_rollout_memory(const ModelSpec& m, const ClusterProfile& c,
                                      const WorkloadSpec& w, int rollout_tp, int rollout_ep) {
  RolloutMemory r;
  r.rollout_tp = rollout_tp;
  const double wb = memory_terms::weight_bytes(w.dtype);
  const double device_bytes = c.device.memory_gib * kGiB;
  const ParamCounts counts = count_params(m);
  const double rtp = rollout_tp;
  const double rep = std::max(rollout_tp, rollout_ep);
  r.weights = wb * (static_cast<double>(counts.non_expert()) / rtp +
                    static_cast<double>(counts.routed_experts) / rep);
  r.budget = device_bytes * w.gpu_memory_utilization;
  // KV heads are split over rollout TP, or replicated (one per device) when TP exceeds them;
  // MLA's latent is cached whole on every rank (ModelSpec::kv_cache_width).
  r.kv_bytes_per_token =
      static_cast<double>(m.num_layers) * static_cast<double>(m.kv_cache_width(rollout_tp)) * wb;
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

// The actor's state on the worst stage's device, in bytes, and what stays resident beside it.
struct ActorState {
  double weights = 0;
  double grads = 0;
  double opt = 0;
  double ref_weights = 0;
  double kept_rollout = 0;  // grpo-trainer's own rollout weights
};

// Adam's states: with LoRA the adapters' (sharded over DP x CP with the distributed optimizer),
// else the stage's parameters (the non-expert ones over DP x CP, the experts over EDP).
double actor_optimizer_bytes(const WorkloadSpec& w, const Layout& l, const ShardedParams& p,
                             double adapters, double world) {
  const ParallelDims& d = l.dims;
  const double dp_shards = static_cast<double>(d.dp) * d.cp;
  const double edp = std::max(1.0, world / (static_cast<double>(d.etp) * d.ep * d.pp));
  double opt = 0;
  if (w.lora.active()) {
    opt = optimizer_bytes(w.dtype) * adapters / (l.distributed_optimizer ? dp_shards : 1.0);
  } else if (l.distributed_optimizer) {
    opt = optimizer_bytes(w.dtype) * (p.non_expert / dp_shards + p.expert / edp);
  } else {
    opt = optimizer_bytes(w.dtype) * p.total();
  }
  // Megatron-Core's CPU optimizer keeps optimizer_offload_fraction of the states (and their
  // fp32 master weights) on the host.
  if (l.offload.cpu_optimizer) opt *= std::clamp(1.0 - l.offload.cpu_optimizer_fraction, 0.0, 1.0);
  return opt;
}

// grpo-trainer generates with weights of its own that stay resident through training
// (docs/memory-model.md "The embedded trainer's rollout weights"): under PP every rank holds
// every layer's shard (each rank generates through the whole depth), and with rollout TP = 1
// under TP or EP a whole copy, gathered from the shards before each rollout. `weights`: the
// stage's own weights.
double kept_rollout_bytes(const ModelSpec& m, const Layout& l, double wb, double weights) {
  double kept_rollout = 0;
  if (l.backend == Backend::kEmbedded) {
    if (l.dims.pp > 1) {
      Layout all_layers = l;
      all_layers.dims.pp = 1;
      all_layers.first_stage_layers = 0;
      all_layers.last_stage_layers = 0;
      kept_rollout += wb * sharded_params(m, all_layers).total() - weights;
    }
    if (l.embedded_whole_model_rollout()) {
      kept_rollout += wb * static_cast<double>(count_params(m).total());
    }
  }
  return kept_rollout;
}

ActorState actor_state(const ModelSpec& m, const WorkloadSpec& w, const Layout& l,
                       const ShardedParams& p, double world) {
  ActorState a;
  const double wb = weight_bytes(w.dtype);
  a.weights = wb * p.total();
  // With LoRA only the adapters (this device's share of them) have gradients and Adam states;
  // the base weights stay frozen in the model dtype and the reference is the actor with the
  // adapters switched off.
  const double total_params = static_cast<double>(count_params(m).total());
  const double adapters =
      w.lora.active() ? lora_params(m, w.lora) * p.total() / std::max(1.0, total_params) : 0.0;
  a.grads = w.lora.active() ? kGradBytes * adapters : kGradBytes * p.total();
  a.opt = actor_optimizer_bytes(w, l, p, adapters, world);
  a.ref_weights = w.use_kl_loss && !w.lora.active() ? a.weights : 0.0;
  a.kept_rollout = kept_rollout_bytes(m, l, wb, a.weights);
  return a;
}

// The activations and logits of one micro batch on the stage where they are largest together.
struct StageTensors {
  MemoryItem activations = MemoryItem::fixed("activations", 0);
  MemoryItem logits = MemoryItem::fixed("logits", 0);
};

// Activations and logits of one micro batch on each stage, with the 1F1B in-flight count.
StageTensors worst_stage_tensors(const ModelSpec& m, const WorkloadSpec& w, const Layout& l) {
  const ParallelDims& d = l.dims;
  const memory_terms::TokenRange tokens = memory_terms::micro_batch_tokens(w, l, d.cp);
  const memory_terms::LayerActivation act = memory_terms::layer_activation_per_token(m, l);
  const std::int64_t per_rank = w.ppo_mini_batch_size * w.rollout_n / std::max(1, d.dp);
  const std::int64_t micro_batches =
      std::max<std::int64_t>(1, per_rank / std::max(1, l.micro_batch));
  const LogprobPath path = memory_terms::logprob_path(w, true);
  const std::vector<int> stages = stage_layers(m, l);
  StageTensors worst;
  std::int64_t layer = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const double in_flight = static_cast<double>(
        std::min<std::int64_t>(static_cast<std::int64_t>(stages.size() - s), micro_batches));
    const auto act_at = [&](double t) {
      if (l.backend == Backend::kEmbedded) {
        return memory_terms::embedded_stage_activations(m, l, w.dtype,
                                                        static_cast<double>(w.seq_length()) / d.cp,
                                                        layer, stages[s], t, in_flight);
      }
      return memory_terms::stage_activations(m, l, act, layer, stages[s], t, in_flight);
    };
    const auto logits_at = [&](double t) {
      if (s + 1 != stages.size()) return 0.0;
      if (l.backend == Backend::kEmbedded) {
        const double responses = t * static_cast<double>(w.max_response_length) /
                                 static_cast<double>(std::max<std::int64_t>(1, w.seq_length()));
        return memory_terms::embedded_logits_bytes(m, l, w.dtype, t, responses);
      }
      return memory_terms::logits_bytes(path, t, static_cast<double>(m.vocab_size) / d.tp);
    };
    MemoryItem stage_act{"activations", act_at(tokens.worst), act_at(tokens.floor)};
    MemoryItem stage_logits{"logits", logits_at(tokens.worst), logits_at(tokens.floor)};
    if (stage_act.bytes + stage_logits.bytes > worst.activations.bytes + worst.logits.bytes) {
      worst.activations = std::move(stage_act);
      worst.logits = std::move(stage_logits);
    }
    layer += stages[s];
  }
  return worst;
}

// verl's offload moves state off the device between phases, not within one: for the update
// the actor's weights, gradients and optimizer states are all loaded back (megatron_workers
// update_actor); an offloaded reference stays on the host while the actor trains.
PhaseMemory training_phase(const WorkloadSpec& w, const Layout& l, const ActorState& a,
                           const StageTensors& t, double capacity, double overhead,
                           double engine_budget) {
  PhaseMemory training;
  training.phase = "training";
  training.capacity = capacity;
  training.items = {
      MemoryItem::fixed("actor weights", a.weights),
      MemoryItem::fixed("actor gradients", a.grads),
      MemoryItem::fixed("actor optimizer states", a.opt),
      t.activations,
      t.logits,
      MemoryItem::fixed("reference weights", l.offload.params ? 0.0 : a.ref_weights),
      MemoryItem::fixed("runtime overhead", overhead),
  };
  if (a.kept_rollout > 0) {
    training.items.push_back(MemoryItem::fixed("rollout weights (kept)", a.kept_rollout));
  }
  // Without free_cache_engine the rollout engine keeps its weights and KV cache during training.
  if (!w.free_cache_engine && l.backend != Backend::kEmbedded) {
    training.items.push_back(MemoryItem::fixed("rollout engine (kept)", engine_budget));
  }
  return training;
}

// grpo-trainer's generation of `seqs` sequences at once, with the whole copy (rollout TP 1
// under TP or EP) or the training layout's shards.
memory_terms::EmbeddedRollout embedded_generation(const ModelSpec& m, const WorkloadSpec& w,
                                                  const Layout& l, double seqs) {
  return memory_terms::embedded_rollout(m, w.dtype, seqs, static_cast<double>(w.max_prompt_length),
                                        static_cast<double>(w.max_response_length),
                                        l.embedded_whole_model_rollout() ? 1.0 : l.dims.tp);
}

// grpo-trainer generates itself: each rank its replica's rows, at most max_num_seqs at a time.
// The batch is the most sequences (up to the rows and max_num_seqs, at least 1) whose KV cache
// and prefill fit in `room` (the capacity beside what stays resident).
std::int64_t embedded_rollout_batch(const ModelSpec& m, const WorkloadSpec& w, const Layout& l,
                                    double room) {
  const std::int64_t rows =
      std::max<std::int64_t>(1, w.train_batch_size * w.rollout_n / std::max(1, l.dims.dp));
  const memory_terms::EmbeddedRollout one = embedded_generation(m, w, l, 1.0);
  const double seqs = std::floor(room / (one.kv_cache + one.workspace));
  return std::clamp<std::int64_t>(
      seqs > 0 ? static_cast<std::int64_t>(std::min(seqs, 1e15)) : 1, 1,
      std::min<std::int64_t>(rows, std::max<std::int64_t>(1, w.max_num_seqs)));
}

// The embedded trainer's rollout: no vLLM engine, the whole actor state stays resident.
PhaseMemory embedded_rollout_phase(const ActorState& a, const memory_terms::EmbeddedRollout& g,
                                   double capacity, double overhead) {
  PhaseMemory rollout;
  rollout.phase = "rollout";
  rollout.capacity = capacity;
  rollout.items = {
      MemoryItem::fixed("actor weights", a.weights),
      MemoryItem::fixed("actor gradients", a.grads),
      MemoryItem::fixed("actor optimizer states", a.opt),
      MemoryItem::fixed("reference weights", a.ref_weights),
      MemoryItem::fixed("rollout weights (kept)", a.kept_rollout),
      MemoryItem::fixed("rollout workspace", g.workspace),
      MemoryItem::fixed("KV cache", g.kv_cache),
      MemoryItem::fixed("runtime overhead", overhead),
  };
  return rollout;
}

// Rollout: the engine's allocation on top of the actor state that stays resident.
PhaseMemory engine_rollout_phase(const Layout& l, const ActorState& a, const RolloutMemory& r,
                                 double capacity, double overhead) {
  PhaseMemory rollout;
  rollout.phase = "rollout";
  rollout.capacity = capacity;
  rollout.items = {
      MemoryItem::fixed("actor weights", l.offload.params ? 0.0 : a.weights),
      MemoryItem::fixed("actor gradients", l.offload.params ? 0.0 : a.grads),
      MemoryItem::fixed("actor optimizer states", l.offload.optimizer ? 0.0 : a.opt),
      MemoryItem::fixed("reference weights", l.offload.params ? 0.0 : a.ref_weights),
      MemoryItem::fixed("rollout weights", r.weights),
      MemoryItem::fixed("rollout workspace", r.workspace),
      MemoryItem::fixed("KV cache", r.kv_capacity),
      MemoryItem::fixed("runtime overhead", overhead),
  };
  return rollout;
}

// What Megatron-Core's layouts cost whichever trainer runs them: the worst stage's parameters,
// gradients and optimizer states, the rollout engine's budget and the training phase. The
// rollout phase is each backend's own.
struct MegatronLayout {
  MemoryEstimate est;
  ActorState actor;
  double capacity = 0;
  double overhead = 0;
};

MegatronLayout megatron_layout(const ModelSpec& m, const ClusterProfile& c, const WorkloadSpec& w,
                               const Layout& l) {
  MegatronLayout s;
  s.capacity = c.device.memory_gib * kGiB * (1.0 - w.memory_headroom);
  s.overhead = runtime_overhead_bytes(c.device.vendor);
  s.est.actor = sharded_params(m, l);
  s.actor = actor_state(m, w, l, s.est.actor, c.world_size());
  s.est.engine = estimate_rollout_memory(m, c, w, l.rollout_tp, l.rollout_ep);
  s.est.training = training_phase(w, l, s.actor, worst_stage_tensors(m, w, l), s.capacity,
                                  s.overhead, s.est.engine.budget);
  return s;
}

// verl's Megatron worker: the rollout engine (vLLM or SGLang) generates beside the actor.
MemoryEstimate estimate_megatron_memory(const ModelSpec& m, const ClusterProfile& c,
                                        const WorkloadSpec& w, const Layout& l) {
  MegatronLayout s = megatron_layout(m, c, w, l);
  MemoryEstimate& est = s.est;
  est.rollout = engine_rollout_phase(l, s.actor, est.engine, s.capacity, s.overhead);
  apply_sglang_static_memory(est, w, c.device.memory_gib * kGiB,
                             static_cast<double>(w.seq_length()));
  apply_engine_worker_offload(est, w);
  return est;
}

// grpo-trainer: no engine; it generates as many sequences at once as fit beside its states.
MemoryEstimate estimate_embedded_memory(const ModelSpec& m, const ClusterProfile& c,
                                        const WorkloadSpec& w, const Layout& l) {
  MegatronLayout s = megatron_layout(m, c, w, l);
  MemoryEstimate& est = s.est;
  const ActorState& a = s.actor;
  const double resident = a.weights + a.grads + a.opt + a.ref_weights + a.kept_rollout + s.overhead;
  est.embedded_rollout_seqs = embedded_rollout_batch(m, w, l, s.capacity - resident);
  est.engine.weights_fit = true;  // no vLLM engine runs: its budget does not apply
  est.rollout = embedded_rollout_phase(
      a, embedded_generation(m, w, l, static_cast<double>(est.embedded_rollout_seqs)), s.capacity,
      s.overhead);
  return est;
}

}  // namespace

MemoryEstimate estimate_memory(const ModelSpec& m, const ClusterProfile& c, const WorkloadSpec& w,
                               const Layout& l) {
  switch (l.backend) {
    case Backend::kFsdp:
      return estimate_fsdp_memory(m, c, w, l);
    case Backend::kEmbedded:
      return estimate_embedded_memory(m, c, w, l);
    case Backend::kMegatron:
      break;
  }
  return estimate_megatron_memory(m, c, w, l);
}

std::optional<std::int64_t> longest_fitting_response(const ModelSpec& m, const ClusterProfile& c,
                                                     const WorkloadSpec& w, const Layout& l) {
  const auto fits = [&](std::int64_t response) {
    WorkloadSpec shorter = w;
    shorter.max_response_length = response;
    return estimate_memory(m, c, shorter, l).training.fits();
  };
  if (!fits(1)) return std::nullopt;
  std::int64_t lo = 1;  // fits
  std::int64_t hi = w.max_response_length;
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace grpo::core
