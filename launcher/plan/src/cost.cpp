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

CostEstimate estimate_cost(const ModelSpec& m, const ClusterProfile& c, const WorkloadSpec& w,
                           const Layout& l, const MemoryEstimate& mem) {
  CostEstimate e;
  const ParallelDims& d = l.dims;
  const double world = c.world_size();
  const double peak = peak_flops(c, w.dtype);
  const double achievable = peak * w.achievable_mfu;
  const ParamCounts counts = count_params(m);
  const double h = static_cast<double>(m.hidden_size);
  const double layers = static_cast<double>(m.num_layers);
  const double seq = static_cast<double>(w.seq_length());
  const double responses = static_cast<double>(w.responses_per_step());
  const double tokens = responses * seq;  // worst case: every response at full length
  const double wb = w.dtype == Dtype::kFp32 ? 4.0 : 2.0;

  // Model FLOPs per token of one forward: 2 x active weights (no FLOPs for the embedding
  // lookup) plus causal attention scores (q width) and values (o width: they differ for MLA,
  // heads x 192 against heads x 128 for DeepSeek-V3). Routed experts are kept apart: their GEMMs
  // see only the tokens routed to each expert, so they run less efficiently when few arrive.
  const double expert_active =
      static_cast<double>(counts.routed_experts) *
      (m.is_moe() ? static_cast<double>(m.experts_per_token) / static_cast<double>(m.num_experts)
                  : 0.0);
  const double active = static_cast<double>(counts.active(m) - counts.embedding - counts.vision);
  const double dense_fwd =
      2.0 * (active - expert_active) +
      2.0 * layers * seq * 0.5 * static_cast<double>(m.q_width() + m.o_width());
  const double expert_fwd = 2.0 * expert_active;
  const double fwd_per_token = dense_fwd + expert_fwd;
  // GEMM efficiency saturates with the rows (tokens) a matrix product sees: T / (T + T0).
  const double micro_tokens = static_cast<double>(l.micro_batch) * seq / d.cp;
  const double dense_eff = micro_tokens / (micro_tokens + kGemmHalfTokens);
  double expert_eff = 1.0;
  if (m.is_moe()) {
    const double per_expert = micro_tokens / (l.sequence_parallel ? d.tp : 1) *
                              static_cast<double>(m.experts_per_token) * d.ep /
                              static_cast<double>(m.num_experts);
    expert_eff = per_expert / (per_expert + kGemmHalfTokens);
  }
  const double fwd_time_per_token = dense_fwd / dense_eff + expert_fwd / expert_eff;
  const double epochs = static_cast<double>(w.ppo_epochs);
  const double passes = 3.0 + (l.recompute == Recompute::kFull ? 1.0 : 0.0);
  const double logprob_passes = w.use_kl_loss ? 2.0 : 1.0;
  e.compute_s = fwd_time_per_token * tokens * passes * epochs / (world * achievable);
  e.logprob_s = fwd_time_per_token * tokens * logprob_passes / (world * achievable);

  // Uneven pipeline stages: every stage waits for the largest.
  if (d.pp > 1) {
    const auto stages = stage_layers(m, l);
    const double largest = *std::max_element(stages.begin(), stages.end());
    const double imbalance = std::max(1.0, largest * d.pp / layers);
    e.compute_s *= imbalance;
    e.logprob_s *= imbalance;
  }
  // Pipeline bubble of 1F1B: (pp - 1) / micro_batches of the ideal time.
  const double per_rank = static_cast<double>(w.ppo_mini_batch_size * w.rollout_n) / d.dp;
  const double micro = std::max(1.0, per_rank / l.micro_batch);
  if (d.pp > 1) e.bubble_s = (e.compute_s + e.logprob_s) * (d.pp - 1) / micro;

  // Tensor parallel: per layer 2 collectives per forward, 2 per backward (+2 with recompute),
  // each moving the activations [tokens, hidden]; and outside the layers the vocabulary-parallel
  // embedding's all-reduce in every forward and the LM head input's in every backward (one stage
  // holds either with PP: the first stage's embedding, the larger count, is charged).
  // Expert tensor parallelism (ETP = TP, the embedded trainer's form) adds one such collective
  // per MoE layer and pass: the TP group's rows gathered for the split experts and their partial
  // outputs reduce-scattered back (the pair moves what one all-reduce moves).
  const double rank_tokens = tokens / (static_cast<double>(d.dp) * d.cp);
  const double stage_layers = layers / d.pp;
  if (d.tp > 1) {
    const double bw = group_bandwidth(c, d.tp, 1);
    const double per_layer = 2.0 * (passes - 1.0) * epochs + 2.0 * logprob_passes;
    const double ends = d.pp > 1 ? epochs + logprob_passes : 2.0 * epochs + logprob_passes;
    const double expert_tp =
        m.is_moe() && d.etp > 1 ? static_cast<double>(m.moe_layers()) / d.pp * per_layer / 2.0 : 0;
    const double collectives = stage_layers * per_layer + ends + expert_tp;
    e.tp_comm_s = ring_time(rank_tokens * h * wb, d.tp, bw) * collectives;
    e.bytes.tp = rank_tokens * h * wb * collectives;
  }
  // Expert parallel: dispatch + combine all-to-all of k copies per token, fwd and bwd.
  if (m.is_moe() && d.ep > 1) {
    const double moe_layers = static_cast<double>(m.moe_layers()) / d.pp;
    const double k = static_cast<double>(m.experts_per_token);
    // Under SP a rank dispatches its own rows; with ETP = TP the TP group's (gathered first).
    const double rows = rank_tokens / (l.sequence_parallel ? static_cast<double>(d.tp) / d.etp : 1);
    const double bytes = rows * k * h * wb;
    const int span = d.ep * d.etp;
    const double local_frac = std::min(1.0, static_cast<double>(c.gpus_per_node) / span);
    const double remote = span <= c.gpus_per_node ? 0.0 : 1.0 - local_frac;
    const double intra = c.network.intra_node_gbps * kGB;
    const double inter = c.network.inter_node_gbps * kGB / c.gpus_per_node;
    const double per =
        bytes * (d.ep - 1) / d.ep * ((1.0 - remote) / intra + remote / std::max(1.0, inter));
    const double count = 2.0 * (passes - 1.0) * epochs + 2.0 * logprob_passes;
    e.ep_comm_s = per * count * moe_layers;
    e.bytes.ep = bytes * count * moe_layers;
  }
  // Data parallel: gradients reduced (and, with the distributed optimizer, parameters gathered)
  // once per optimizer step.
  const double optimizer_steps =
      static_cast<double>(w.train_batch_size) / static_cast<double>(w.ppo_mini_batch_size) * epochs;
  {
    const int dp_members = d.dp * d.cp;
    // All-reduce of fp32 gradients, or with the distributed optimizer a reduce-scatter of them
    // plus an all-gather of the updated weights (each half an all-reduce's traffic).
    const double per_param = l.distributed_optimizer ? (4.0 + wb) / 2.0 : 4.0;
    const double bytes = mem.actor.non_expert * per_param;
    double t = ring_time(bytes, dp_members, group_bandwidth(c, dp_members, d.tp));
    const int edp = std::max(1, static_cast<int>(world) / (d.etp * d.ep * d.pp));
    // What is handed to a reduction at all: a group of one reduces nothing, except that under
    // sequence parallelism the sequence-partial parameters are summed over the TP ranks.
    double all = dp_members > 1                    ? bytes
                 : l.sequence_parallel && d.tp > 1 ? mem.actor.sequence_partial * per_param
                                                   : 0.0;
    if (m.is_moe()) {
      const double ebytes = mem.actor.expert * per_param;
      t += ring_time(ebytes, edp, group_bandwidth(c, edp, d.etp * d.ep));
      if (edp > 1) all += ebytes;
    }
    e.dp_comm_s = t * optimizer_steps * kDpExposed;
    e.bytes.dp = all * optimizer_steps;
  }
  // Pipeline point-to-point: activations forward and gradients backward per micro batch.
  if (d.pp > 1) {
    const bool inter = static_cast<double>(world) / d.pp >= c.gpus_per_node && c.nodes > 1;
    const double bw =
        inter ? c.network.inter_node_gbps * kGB / c.gpus_per_node : c.network.intra_node_gbps * kGB;
    const double bytes =
        static_cast<double>(l.micro_batch) * seq / d.cp * h * wb / (l.sequence_parallel ? d.tp : 1);
    const double sends = micro * optimizer_steps * (2.0 + logprob_passes);
    e.pp_comm_s = sends * (bytes / bw + 2.0 * kCollectiveLatency);
    e.bytes.pp = sends * bytes;
  }
  // Offload (verl semantics): offloaded state leaves the device after its phase and returns
  // before the next one. The actor's weights go off and back on three times per step (rollout,
  // log-probs, update), the reference's once; optimizer states around the update. verl reads
  // grad_offload but moves no gradients. The CPU optimizer updates only this device's shard.
  {
    const double host = c.device.host_link_gbps * kGB;
    const double params = mem.actor.total();
    const double opt_bytes = mem.training.bytes("actor optimizer states");
    if (l.offload.params)
      e.offload_s += 2.0 * wb * params * (3.0 + (w.use_kl_loss ? 1.0 : 0.0)) / host;
    if (l.offload.optimizer) e.offload_s += 2.0 * opt_bytes / host;
    if (l.offload.cpu_optimizer) {
      const double edp_shards = std::max(1.0, world / (static_cast<double>(d.etp) * d.ep * d.pp));
      const double shard =
          l.distributed_optimizer
              ? mem.actor.non_expert / std::max(1, d.dp * d.cp) + mem.actor.expert / edp_shards
              : params;
      e.offload_s += ((4.0 + wb) * shard / host + shard / kCpuAdamParamsPerS) * optimizer_steps;
    }
  }
  e.rollout_s = estimate_rollout_seconds(m, c, w, mem.engine);

  e.step_s = e.rollout_s + e.logprob_s + e.compute_s + e.bubble_s + e.tp_comm_s + e.ep_comm_s +
             e.dp_comm_s + e.pp_comm_s + e.offload_s;
  const double useful = fwd_per_token * tokens * (3.0 * epochs + logprob_passes) +
                        2.0 * active * tokens;  // rollout generates every token once
  e.model_tflop = useful / 1e12;
  e.mfu = e.step_s > 0 ? useful / (e.step_s * world * peak) : 0;
  return e;
}

}  // namespace grpo::core
