#include "grpo/plan/cost.h"

#include <algorithm>
#include <cmath>

namespace grpo::core {
namespace {

constexpr double kGB = 1e9;
constexpr double kDpExposed = 1.0;  // verl turns overlap_grad_reduce off: all DP traffic is exposed
constexpr double kCollectiveLatency = 10e-6;
constexpr double kDecodeMfu = 0.5;          // share of the achievable fraction decode reaches
constexpr double kCpuAdamParamsPerS = 1e9;  // host Adam updates per second per device
constexpr double kGemmHalfTokens = 256;     // rows at which a GEMM reaches half its peak rate

double peak_flops(const ClusterProfile& c, Dtype d) {
  switch (d) {
    case Dtype::kBf16:
      return c.device.peak_bf16_tflops * 1e12;
    case Dtype::kFp16:
      return c.device.peak_fp16_tflops * 1e12;
    case Dtype::kFp32:
      return c.device.peak_fp32_tflops > 0 ? c.device.peak_fp32_tflops * 1e12
                                           : c.device.peak_fp16_tflops * 1e12 / 16.0;
  }
  return c.device.peak_fp16_tflops * 1e12;
}

// Per-device bandwidth for a collective over `members` ranks laid out `stride` apart.
double group_bandwidth(const ClusterProfile& c, int members, int stride) {
  const double intra = c.network.intra_node_gbps * kGB;
  const int gpn = c.gpus_per_node;
  if (members <= 1) return intra;
  if (static_cast<long>(members) * stride <= gpn) return intra;
  // The node's NICs are shared by its gpn devices; a group with m members on a node uses m
  // shares (a hierarchical ring crosses each node boundary once per direction).
  const int local = std::max(1, std::min(members, gpn / std::max(1, stride)));
  const double inter = c.network.inter_node_gbps * kGB * local / gpn;
  return std::min(intra, inter);
}

double ring_time(double bytes, int members, double bandwidth) {
  if (members <= 1 || bytes <= 0) return 0;
  return 2.0 * (members - 1) / members * bytes / bandwidth;
}

}  // namespace

double estimate_rollout_seconds(const ModelSpec& m, const ClusterProfile& c, const WorkloadSpec& w,
                                const RolloutMemory& r) {
  // Prefill is compute-bound; each decode step reads the engine's weights (only the experts the
  // running batch touches) and the KV cache, or is compute-bound when the batch is large.
  const ParamCounts counts = count_params(m);
  const double world = c.world_size();
  const double achievable = peak_flops(c, w.dtype) * w.achievable_mfu;
  const double wb = w.dtype == Dtype::kFp32 ? 4.0 : 2.0;
  const double h = static_cast<double>(m.hidden_size);
  const double layers = static_cast<double>(m.num_layers);
  const double seq = static_cast<double>(w.seq_length());
  const double responses = static_cast<double>(w.responses_per_step());
  const double active = static_cast<double>(counts.active(m) - counts.embedding - counts.vision);
  const double rtp = r.rollout_tp;
  const double replicas = world / rtp;
  const double seqs = std::ceil(responses / replicas);
  const double kv_fit =
      r.kv_bytes_per_token > 0 ? std::floor(r.kv_capacity / (seq * r.kv_bytes_per_token)) : seqs;
  const double batch = std::max(1.0, std::min({seqs, static_cast<double>(w.max_num_seqs), kv_fit}));
  const double waves = std::ceil(seqs / batch);
  const double prompt = static_cast<double>(w.max_prompt_length);
  const double response = static_cast<double>(w.max_response_length);
  const double prefill_s = 2.0 * active * responses * prompt / (world * achievable);
  double weight_bytes = r.weights;
  if (m.is_moe()) {
    const double touched = std::min(
        1.0, batch * static_cast<double>(m.experts_per_token) / static_cast<double>(m.num_experts));
    const double expert_bytes = wb * static_cast<double>(counts.routed_experts) / rtp;
    weight_bytes = weight_bytes - expert_bytes + expert_bytes * touched;
  }
  const double kv_read = batch * (prompt + response / 2.0) * r.kv_bytes_per_token;
  const double hbm = c.device.memory_bandwidth_gbps * kGB;
  const double memory_bound = (weight_bytes + kv_read) / hbm;
  const double compute_bound = 2.0 * active / rtp * batch / (achievable * kDecodeMfu);
  double step = std::max(memory_bound, compute_bound);
  if (rtp > 1) {
    step += 2.0 * layers *
            (kCollectiveLatency + 2.0 * batch * h * wb / (c.network.intra_node_gbps * kGB));
  }
  return prefill_s + waves * response * step;
}

namespace {

// The shape of one GRPO step as the cost terms see it.
struct StepShape {
  double world = 0;
  double h = 0;       // hidden size
  double layers = 0;  // all the model's layers
  double seq = 0;     // prompt + response
  double tokens = 0;  // worst case: every response at full length
  double wb = 0;      // bytes of a weight or activation value
  double epochs = 0;
  double passes = 0;          // forward + backward (2) + recompute of one update
  double logprob_passes = 0;  // the old policy's and with the KL loss the reference's
  double micro = 0;           // micro batches of one rank's mini batch
  double optimizer_steps = 0;
};

StepShape step_shape(const ModelSpec& m, const ClusterProfile& c, const WorkloadSpec& w,
                     const Layout& l) {
  StepShape s;
  s.world = c.world_size();
  s.h = static_cast<double>(m.hidden_size);
  s.layers = static_cast<double>(m.num_layers);
  s.seq = static_cast<double>(w.seq_length());
  s.tokens = static_cast<double>(w.responses_per_step()) * s.seq;
  s.wb = w.dtype == Dtype::kFp32 ? 4.0 : 2.0;
  s.epochs = static_cast<double>(w.ppo_epochs);
  s.passes = 3.0 + (l.recompute == Recompute::kFull ? 1.0 : 0.0);
  s.logprob_passes = w.use_kl_loss ? 2.0 : 1.0;
  const double per_rank = static_cast<double>(w.ppo_mini_batch_size * w.rollout_n) / l.dims.dp;
  s.micro = std::max(1.0, per_rank / l.micro_batch);
  s.optimizer_steps = static_cast<double>(w.train_batch_size) /
                      static_cast<double>(w.ppo_mini_batch_size) * s.epochs;
  return s;
}

// Model FLOPs per token of one forward: 2 x active weights (no FLOPs for the embedding
// lookup) plus causal attention scores (q width) and values (o width: they differ for MLA,
// heads x 192 against heads x 128 for DeepSeek-V3). Routed experts are kept apart: their GEMMs
// see only the tokens routed to each expert, so they run less efficiently when few arrive.
struct ForwardFlops {
  double active = 0;  // active weights outside the embedding and the vision tower
  double dense = 0;   // per token, everything but the routed experts
  double expert = 0;  // per token, the routed experts
};

ForwardFlops forward_flops(const ModelSpec& m, const StepShape& s) {
  const ParamCounts counts = count_params(m);
  const double expert_active =
      static_cast<double>(counts.routed_experts) *
      (m.is_moe() ? static_cast<double>(m.experts_per_token) / static_cast<double>(m.num_experts)
                  : 0.0);
  ForwardFlops f;
  f.active = static_cast<double>(counts.active(m) - counts.embedding - counts.vision);
  f.dense = 2.0 * (f.active - expert_active) +
            2.0 * s.layers * s.seq * 0.5 * static_cast<double>(m.q_width() + m.o_width());
  f.expert = 2.0 * expert_active;
  return f;
}

// The forward FLOPs per token weighted by GEMM efficiency, which saturates with the rows
// (tokens) a matrix product sees: T / (T + T0).
double effective_forward_flops(const ModelSpec& m, const Layout& l, const ForwardFlops& f,
                               double seq) {
  const ParallelDims& d = l.dims;
  const double micro_tokens = static_cast<double>(l.micro_batch) * seq / d.cp;
  const double dense_eff = micro_tokens / (micro_tokens + kGemmHalfTokens);
  double expert_eff = 1.0;
  if (m.is_moe()) {
    const double per_expert = micro_tokens / (l.sequence_parallel ? d.tp : 1) *
                              static_cast<double>(m.experts_per_token) * d.ep /
                              static_cast<double>(m.num_experts);
    expert_eff = per_expert / (per_expert + kGemmHalfTokens);
  }
  return f.dense / dense_eff + f.expert / expert_eff;
}

// Seconds and payload bytes of one kind of communication per step.
struct Traffic {
  double seconds = 0;
  double bytes = 0;
};

// Tensor parallel: per layer 2 collectives per forward, 2 per backward (+2 with recompute),
// each moving the activations [tokens, hidden]; and outside the layers the vocabulary-parallel
// embedding's all-reduce in every forward and the LM head input's in every backward (one stage
// holds either with PP: the first stage's embedding, the larger count, is charged).
// Expert tensor parallelism (ETP = TP, the embedded trainer's form) adds one such collective
// per MoE layer and pass: the TP group's rows gathered for the split experts and their partial
// outputs reduce-scattered back (the pair moves what one all-reduce moves).
Traffic tensor_parallel_traffic(const ModelSpec& m, const ClusterProfile& c, const Layout& l,
                                const StepShape& s) {
  const ParallelDims& d = l.dims;
  if (d.tp <= 1) return {};
  const double rank_tokens = s.tokens / (static_cast<double>(d.dp) * d.cp);
  const double stage_layers = s.layers / d.pp;
  const double bw = group_bandwidth(c, d.tp, 1);
  const double per_layer = 2.0 * (s.passes - 1.0) * s.epochs + 2.0 * s.logprob_passes;
  const double ends = d.pp > 1 ? s.epochs + s.logprob_passes : 2.0 * s.epochs + s.logprob_passes;
  const double expert_tp =
      m.is_moe() && d.etp > 1 ? static_cast<double>(m.moe_layers()) / d.pp * per_layer / 2.0 : 0;
  const double collectives = stage_layers * per_layer + ends + expert_tp;
  return {ring_time(rank_tokens * s.h * s.wb, d.tp, bw) * collectives,
          rank_tokens * s.h * s.wb * collectives};
}

// Expert parallel: dispatch + combine all-to-all of k copies per token, fwd and bwd.
Traffic expert_parallel_traffic(const ModelSpec& m, const ClusterProfile& c, const Layout& l,
                                const StepShape& s) {
  const ParallelDims& d = l.dims;
  if (!m.is_moe() || d.ep <= 1) return {};
  const double rank_tokens = s.tokens / (static_cast<double>(d.dp) * d.cp);
  const double moe_layers = static_cast<double>(m.moe_layers()) / d.pp;
  const double k = static_cast<double>(m.experts_per_token);
  // Under SP a rank dispatches its own rows; with ETP = TP the TP group's (gathered first).
  const double rows = rank_tokens / (l.sequence_parallel ? static_cast<double>(d.tp) / d.etp : 1);
  const double bytes = rows * k * s.h * s.wb;
  const int span = d.ep * d.etp;
  const double local_frac = std::min(1.0, static_cast<double>(c.gpus_per_node) / span);
  const double remote = span <= c.gpus_per_node ? 0.0 : 1.0 - local_frac;
  const double intra = c.network.intra_node_gbps * kGB;
  const double inter = c.network.inter_node_gbps * kGB / c.gpus_per_node;
  const double per =
      bytes * (d.ep - 1) / d.ep * ((1.0 - remote) / intra + remote / std::max(1.0, inter));
  const double count = 2.0 * (s.passes - 1.0) * s.epochs + 2.0 * s.logprob_passes;
  return {per * count * moe_layers, bytes * count * moe_layers};
}

// Data parallel: gradients reduced (and, with the distributed optimizer, parameters gathered)
// once per optimizer step.
Traffic data_parallel_traffic(const ModelSpec& m, const ClusterProfile& c, const Layout& l,
                              const ShardedParams& actor, const StepShape& s) {
  const ParallelDims& d = l.dims;
  const int dp_members = d.dp * d.cp;
  // All-reduce of fp32 gradients, or with the distributed optimizer a reduce-scatter of them
  // plus an all-gather of the updated weights (each half an all-reduce's traffic).
  const double per_param = l.distributed_optimizer ? (4.0 + s.wb) / 2.0 : 4.0;
  const double bytes = actor.non_expert * per_param;
  double t = ring_time(bytes, dp_members, group_bandwidth(c, dp_members, d.tp));
  const int edp = std::max(1, static_cast<int>(s.world) / (d.etp * d.ep * d.pp));
  // What is handed to a reduction at all: a group of one reduces nothing, except that under
  // sequence parallelism the sequence-partial parameters are summed over the TP ranks.
  double all = dp_members > 1                    ? bytes
               : l.sequence_parallel && d.tp > 1 ? actor.sequence_partial * per_param
                                                 : 0.0;
  if (m.is_moe()) {
    const double ebytes = actor.expert * per_param;
    t += ring_time(ebytes, edp, group_bandwidth(c, edp, d.etp * d.ep));
    if (edp > 1) all += ebytes;
  }
  return {t * s.optimizer_steps * kDpExposed, all * s.optimizer_steps};
}

// Pipeline point-to-point: activations forward and gradients backward per micro batch.
Traffic pipeline_traffic(const ClusterProfile& c, const Layout& l, const StepShape& s) {
  const ParallelDims& d = l.dims;
  if (d.pp <= 1) return {};
  const bool inter = static_cast<double>(s.world) / d.pp >= c.gpus_per_node && c.nodes > 1;
  const double bw =
      inter ? c.network.inter_node_gbps * kGB / c.gpus_per_node : c.network.intra_node_gbps * kGB;
  const double bytes = static_cast<double>(l.micro_batch) * s.seq / d.cp * s.h * s.wb /
                       (l.sequence_parallel ? d.tp : 1);
  const double sends = s.micro * s.optimizer_steps * (2.0 + s.logprob_passes);
  return {sends * (bytes / bw + 2.0 * kCollectiveLatency), sends * bytes};
}

// Offload (verl semantics): offloaded state leaves the device after its phase and returns
// before the next one. The actor's weights go off and back on three times per step (rollout,
// log-probs, update), the reference's once; optimizer states around the update. verl reads
// grad_offload but moves no gradients. The CPU optimizer updates only this device's shard.
double offload_seconds(const ClusterProfile& c, const WorkloadSpec& w, const Layout& l,
                       const MemoryEstimate& mem, const StepShape& s) {
  const ParallelDims& d = l.dims;
  const double host = c.device.host_link_gbps * kGB;
  const double params = mem.actor.total();
  const double opt_bytes = mem.training.bytes("actor optimizer states");
  double seconds = 0;
  if (l.offload.params) seconds += 2.0 * s.wb * params * (3.0 + (w.use_kl_loss ? 1.0 : 0.0)) / host;
  if (l.offload.optimizer) seconds += 2.0 * opt_bytes / host;
  if (l.offload.cpu_optimizer) {
    const double edp_shards = std::max(1.0, s.world / (static_cast<double>(d.etp) * d.ep * d.pp));
    const double shard = l.distributed_optimizer ? mem.actor.non_expert / std::max(1, d.dp * d.cp) +
                                                       mem.actor.expert / edp_shards
                                                 : params;
    seconds += ((4.0 + s.wb) * shard / host + shard / kCpuAdamParamsPerS) * s.optimizer_steps;
  }
  return seconds;
}

}  // namespace

CostEstimate estimate_cost(const ModelSpec& m, const ClusterProfile& c, const WorkloadSpec& w,
                           const Layout& l, const MemoryEstimate& mem) {
  CostEstimate e;
  const ParallelDims& d = l.dims;
  const StepShape s = step_shape(m, c, w, l);
  const double peak = peak_flops(c, w.dtype);
  const double achievable = peak * w.achievable_mfu;
  const ForwardFlops f = forward_flops(m, s);
  const double fwd_time_per_token = effective_forward_flops(m, l, f, s.seq);
  e.compute_s = fwd_time_per_token * s.tokens * s.passes * s.epochs / (s.world * achievable);
  e.logprob_s = fwd_time_per_token * s.tokens * s.logprob_passes / (s.world * achievable);
  // Uneven pipeline stages: every stage waits for the largest.
  if (d.pp > 1) {
    const auto stages = stage_layers(m, l);
    const double largest = *std::max_element(stages.begin(), stages.end());
    const double imbalance = std::max(1.0, largest * d.pp / s.layers);
    e.compute_s *= imbalance;
    e.logprob_s *= imbalance;
  }
  // Pipeline bubble of 1F1B: (pp - 1) / micro_batches of the ideal time.
  if (d.pp > 1) e.bubble_s = (e.compute_s + e.logprob_s) * (d.pp - 1) / s.micro;

  const Traffic tp = tensor_parallel_traffic(m, c, l, s);
  e.tp_comm_s = tp.seconds;
  e.bytes.tp = tp.bytes;
  const Traffic ep = expert_parallel_traffic(m, c, l, s);
  e.ep_comm_s = ep.seconds;
  e.bytes.ep = ep.bytes;
  const Traffic dp = data_parallel_traffic(m, c, l, mem.actor, s);
  e.dp_comm_s = dp.seconds;
  e.bytes.dp = dp.bytes;
  const Traffic pp = pipeline_traffic(c, l, s);
  e.pp_comm_s = pp.seconds;
  e.bytes.pp = pp.bytes;
  e.offload_s = offload_seconds(c, w, l, mem, s);
  e.rollout_s = estimate_rollout_seconds(m, c, w, mem.engine);

  e.step_s = e.rollout_s + e.logprob_s + e.compute_s + e.bubble_s + e.tp_comm_s + e.ep_comm_s +
             e.dp_comm_s + e.pp_comm_s + e.offload_s;
  const double useful = (f.dense + f.expert) * s.tokens * (3.0 * s.epochs + s.logprob_passes) +
                        2.0 * f.active * s.tokens;  // rollout generates every token once
  e.model_tflop = useful / 1e12;
  e.mfu = e.step_s > 0 ? useful / (e.step_s * s.world * peak) : 0;
  return e;
}

}  // namespace grpo::core
