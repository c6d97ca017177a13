#include "memory_terms.h"

#include <algorithm>
#include <cmath>

namespace grpo::core::memory_terms {

double weight_bytes(Dtype d) {
  return d == Dtype::kFp32 ? 4.0 : 2.0;
}

double optimizer_bytes(Dtype d) {
  return d == Dtype::kFp32 ? 8.0 : 12.0;
}

LayerActivation layer_activation_per_token(const ModelSpec& m, const Layout& l) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.q_width());
  const double kv = static_cast<double>(m.kv_width());
  const double v = static_cast<double>(m.v_width());
  const double o = static_cast<double>(m.o_width());
  const double tp = l.dims.tp;
  // `tp_h` divides the hidden-size terms (TP with sequence parallel, else 1); `tp` divides the
  // head / FFN terms.
  const double tp_h = l.sequence_parallel ? tp : 1.0;
  // Attention: norm input + norm output (QKV input) [hidden terms]; q, k, v and the attention
  // output (o-proj input) [split by TP]; flash-attention softmax statistics, fp32 per head.
  const double attention = 2.0 * 2.0 * h / tp_h + 2.0 * (q + kv + v + o) / tp +
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

TokenRange micro_batch_tokens(const WorkloadSpec& w, const Layout& l, int split) {
  const double padded =
      static_cast<double>(l.micro_batch) * static_cast<double>(w.seq_length()) / std::max(1, split);
  TokenRange t;
  t.worst = w.dynamic_batch() ? static_cast<double>(w.max_token_len_per_gpu) : padded;
  t.floor = w.remove_padding ? 1.0 : t.worst;
  return t;
}

bool prefix_grouper_applies(const WorkloadSpec& w, int ulysses) {
  return w.prefix_grouper && !w.remove_padding && ulysses <= 1 && !w.fused_logprob &&
         !w.dynamic_batch();
}

TokenRange prefix_grouper_tokens(const WorkloadSpec& w, const Layout& l) {
  // verl trainer/ppo/prefix_grouper_utils.py build_pg_from_micro_batch: each run of one prompt's
  // responses in a micro batch becomes one row, the prompt's real tokens once and then each
  // response's real tokens, padded to the longest row. ray_trainer.py _balance_batch keeps a
  // prompt's responses whole and in order on one rank, and a rank's mini batch is whole prompts
  // (GROUP_SPLIT otherwise), so micro batch k covers rows [kB, kB + B) of runs of n; the offsets
  // repeat after at most n micro batches.
  const std::int64_t n = std::max<std::int64_t>(1, w.rollout_n);
  const std::int64_t b = std::max<std::int64_t>(1, l.micro_batch);
  const std::int64_t rows =
      std::max(b, w.ppo_mini_batch_size * n / std::max<std::int64_t>(1, l.dims.dp));
  const std::int64_t windows = std::min((rows + b - 1) / b, n);
  const double prompt = static_cast<double>(w.max_prompt_length);
  const double response = static_cast<double>(w.max_response_length);
  TokenRange t;
  for (std::int64_t k = 0; k < windows; ++k) {
    const std::int64_t first = std::min(n - (k * b) % n, b);  // the run the window starts in
    const std::int64_t rest = b - first;
    const std::int64_t runs = 1 + (rest + n - 1) / n;
    const std::int64_t longest = std::max(first, std::min(n, rest));
    t.worst = std::max(
        t.worst, static_cast<double>(runs) * (prompt + static_cast<double>(longest) * response));
  }
  t.floor = 1.0;  // only real tokens: as short as the data
  t.grouped_responses = static_cast<double>(b) * response;
  return t;
}

double prefix_grouper_logits_bytes(double concat, double responses, double vocab) {
  // pg_forward: model(...).logits in bf16 over the concatenated rows, split_output's bf16 copy
  // of the response rows, then .float() and logprobs_from_logits on them as on the unfused path.
  return vocab * (2.0 * concat + 2.0 * responses) +
         logits_bytes(LogprobPath::kUnfused, responses, vocab);
}

LogprobPath logprob_path(const WorkloadSpec& w, bool megatron) {
  if (w.fused_logprob) return LogprobPath::kFused;
  if (megatron) return LogprobPath::kVocabParallel;
  return w.entropy_chunking ? LogprobPath::kChunkedEntropy : LogprobPath::kUnfused;
}

double logits_bytes(LogprobPath path, double tokens, double vocab) {
  const double one = tokens * vocab * 4.0;  // one fp32 logits tensor
  switch (path) {
    case LogprobPath::kFused:
      // Token rows over the whole vocabulary in one 64 MiB chunk, plus per-token statistics
      // (bench/kernels/RESULTS.md: 1.30 GiB above the inputs, 1.19 GiB of it the gradients).
      return std::min(one, 64.0 * 1024 * 1024) + 16.0 * tokens;
    case LogprobPath::kVocabParallel:
      // verl's vocab-parallel log-probs and entropy (verl/utils/megatron/tensor_parallel.py):
      // two fp32 logits tensors at the peak (verl PR #1007).
      return 2.0 * one;
    case LogprobPath::kChunkedEntropy:
      // bf16 logits and their gradient (4 B a value) plus one fp32 chunk of 2048 rows with its
      // softmax and the output (4 + 2 + 1 B a value; verl entropy_from_logits_with_chunking).
      return tokens * vocab * 4.0 + std::min(tokens, 2048.0) * vocab * 7.0;
    case LogprobPath::kUnfused:
      // 3.5 fp32 logits tensors: the Python/LibTorch reference measured in
      // bench/kernels/RESULTS.md peaks at 9.29 GiB above its inputs for [4096, 151936], of
      // which 1.19 GiB are the inputs' gradients: (9.29 - 1.19) / 2.32 GiB = 3.5.
      return 3.5 * one;
  }
  return 3.5 * one;
}

double stage_activations(const ModelSpec& m, const Layout& l, const LayerActivation& act,
                         std::int64_t first_layer, int layers, double tokens, double in_flight) {
  double full = 0;
  double one_layer = 0;
  for (int i = 0; i < layers; ++i) {
    const double per = act.of_layer(m, first_layer + i) * tokens;
    full += per;
    one_layer = std::max(one_layer, per);
  }
  if (l.recompute != Recompute::kFull) return full * in_flight;
  const int n = std::clamp(l.recompute_layers, 1, std::max(1, layers));
  if (l.recompute_method == RecomputeMethod::kBlock) {
    // The first n layers keep only their inputs; the rest keep everything.
    const double kept = full - (full / layers) * n;
    return (act.input * tokens * n + kept) * in_flight + one_layer;
  }
  // Uniform: the input of every group of n layers, and one group recomputed at a time.
  const double groups = std::ceil(static_cast<double>(layers) / n);
  return act.input * tokens * groups * in_flight + one_layer * n;
}

namespace {

// Per token of a micro batch, for grpo-trainer. `rows` is 1 / TP under sequence parallelism (the
// norms and residuals hold the rank's rows), else 1; `routed` the rows the rank's experts see per
// token (the TP group's with ETP = TP).
struct EmbeddedTerms {
  double rows = 1, routed = 1, dense = 0, moe = 0, moe_transient = 0, attention_transient = 0;
};

EmbeddedTerms embedded_terms(const ModelSpec& m, const Layout& l, double seq, Dtype dtype) {
  // Bytes of an activation: the parameters' dtype (bf16 parameters make bf16 activations).
  const double kF = weight_bytes(dtype);
  // The softmax runs in fp32 whatever the dtype: with bf16 its fp32 output is kept next to the
  // bf16 copy the attention product keeps.
  const double softmax = 4.0 + (kF < 4.0 ? kF : 0.0);
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.q_width());
  const double kv = static_cast<double>(m.kv_width());
  const double v = static_cast<double>(m.v_width());
  const double o = static_cast<double>(m.o_width());
  const double a = static_cast<double>(m.num_attention_heads);
  const double tp = l.dims.tp;
  EmbeddedTerms e;
  e.rows = l.sequence_parallel ? 1.0 / tp : 1.0;
  // Norm input and the residual sum (the rank's rows); the norm output as q/k/v see it (gathered
  // under SP, a copy under TP: whole); q/k norm inputs; q (regrouped for GQA), k and v after RoPE
  // and the attention output; the softmax output over `seq` keys per head.
  const double attention = kF * (2.0 * h * e.rows + h) + (m.qk_norm ? kF * (q + kv) / tp : 0.0) +
                           kF * (q + kv + v + o) / tp + softmax * (a / tp) * seq;
  // SwiGLU as separate ops: gate, its SiLU, up and their product; the input whole.
  const double f = static_cast<double>(m.ffn_hidden_size);
  e.dense = attention + kF * h + kF * 4.0 * f / tp;
  if (m.is_moe()) {
    const double k = static_cast<double>(m.experts_per_token);
    const double fe = static_cast<double>(m.moe_ffn_hidden_size);
    const double shared =
        static_cast<double>(m.num_shared_experts * m.shared_expert_ffn_hidden_size);
    e.routed = e.rows * (l.dims.etp > 1 ? tp : 1.0);
    // The norm output on the rows; the router's probabilities; per routed copy its input row and
    // the weighted output row, and each expert's SwiGLU (split by ETP); the shared expert on the
    // gathered (or copied) sequence, its output kept by the sigmoid gate.
    e.moe = attention + (kF * h + 4.0 * static_cast<double>(m.num_experts)) * e.rows +
            kF * k * (2.0 * h + 4.0 * fe / l.dims.etp) * e.routed;
    if (shared > 0) {
      e.moe += (tp > 1 ? kF * h : 0.0) + kF * 4.0 * shared / tp +
               (m.shared_expert_gate ? kF * h * e.rows : 0.0);
    }
    // Alive only while the layer runs: the output sum and the weighted rows before it; with EP
    // also the received rows and the outputs to send back.
    e.moe_transient = kF * (2.0 * h + k * h * (l.dims.ep > 1 ? 3.0 : 1.0)) * e.routed;
  }
  // The backward of one layer's attention: the gradient of the probabilities (activation dtype)
  // and of the scores (the fp32 softmax's) alive next to the saved probabilities, `seq` keys per
  // head.
  e.attention_transient = (kF + 4.0) * (a / tp) * seq;
  return e;
}

}  // namespace

double embedded_stage_activations(const ModelSpec& m, const Layout& l, Dtype dtype, double seq,
                                  std::int64_t first_layer, int layers, double tokens,
                                  double in_flight) {
  const EmbeddedTerms e = embedded_terms(m, l, seq, dtype);
  double per_token = 0;
  bool moe = false;
  for (int i = 0; i < layers; ++i) {
    const bool is_moe = m.is_moe() && first_layer + i >= m.first_k_dense_layers;
    per_token += is_moe ? e.moe : e.dense;
    moe = moe || is_moe;
  }
  const double h = static_cast<double>(m.hidden_size);
  const double tp = l.dims.tp;
  const double largest =
      std::max({static_cast<double>(m.vocab_size) / tp, static_cast<double>(m.q_width()) / tp,
                m.dense_layers() > 0 ? static_cast<double>(m.ffn_hidden_size) / tp : 0.0,
                static_cast<double>(m.moe_ffn_hidden_size) / l.dims.etp,
                static_cast<double>(m.num_shared_experts * m.shared_expert_ffn_hidden_size) / tp});
  // The largest weight's gradient, made whole before it is added to .grad; with bf16 parameters
  // the fp32 main gradient takes it through an fp32 copy (LibTorch's CPU kernels cast a
  // mixed-dtype input in a temporary; on GPUs the cast is fused and this overcounts by 4 bytes).
  const double gradient = weight_bytes(dtype) + (weight_bytes(dtype) < 4.0 ? 4.0 : 0.0);
  // The two backward transients come one after the other (a layer's weights' gradients in its
  // MLP and projections, the attention's before them): the larger counts.
  const double transient =
      std::max(layers > 0 ? e.attention_transient * tokens : 0.0, gradient * largest * h);
  return per_token * tokens * in_flight + (moe ? e.moe_transient * tokens : 0.0) + transient;
}

double embedded_logits_bytes(const ModelSpec& m, const Layout& l, Dtype dtype, double tokens,
                             double response_tokens) {
  const double h = static_cast<double>(m.hidden_size);
  const double tp = l.dims.tp;
  const double rows = l.sequence_parallel ? 1.0 / tp : 1.0;
  const double vocab = static_cast<double>(m.vocab_size) / tp;
  // The log-probs are taken at the response tokens only: without TP with the fused log-prob
  // kernel, with it as the vocabulary-parallel logits and exp(z).
  const double logits = tp > 1 ? 2.0 * 4.0 * vocab * response_tokens
                               : logits_bytes(LogprobPath::kFused, response_tokens, vocab);
  // The final norm's input and the hidden states the LM head sees: every token.
  return weight_bytes(dtype) * h * (rows + 1.0) * tokens + logits;
}

EmbeddedRollout embedded_rollout(const ModelSpec& m, Dtype dtype, double seqs, double prompt,
                                 double response, double tp) {
  const double wb = weight_bytes(dtype);
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.q_width());
  const double kv = static_cast<double>(m.kv_width());
  const double v = static_cast<double>(m.v_width());
  const double o = static_cast<double>(m.o_width());
  const double a = static_cast<double>(m.num_attention_heads);
  EmbeddedRollout r;
  r.kv_cache =
      2.0 * static_cast<double>(m.num_layers) * seqs * (kv / tp) * (prompt + response) * wb;
  // The prefill's attention: the masked scores and their fp32 softmax alive together (with bf16
  // also the scores' fp32 copy and the probabilities rounded back to bf16, all four until the
  // statement ends), P x P per head; beside them the layer's residual stream, norm output, q, k,
  // v and attention output.
  const double softmax = wb + 4.0 + (wb < 4.0 ? 4.0 + wb : 0.0);
  const double attention = softmax * seqs * (a / tp) * prompt * prompt +
                           wb * seqs * prompt * (2.0 * h + (q + kv + v + o) / tp);
  // The prefill's MLP: gate, up and their product (the routed experts' on k copies of each row).
  const double f = m.is_moe()
                       ? static_cast<double>(m.experts_per_token * m.moe_ffn_hidden_size +
                                             m.num_shared_experts * m.shared_expert_ffn_hidden_size)
                       : static_cast<double>(m.ffn_hidden_size);
  const double mlp = wb * seqs * prompt * (2.0 * h + 3.0 * f / tp);
  // Sampling the next token: the last position's fp32 logits over the whole vocabulary, its
  // softmax and a masked copy (top-k / top-p).
  const double sampling = 3.0 * 4.0 * seqs * static_cast<double>(m.vocab_size);
  r.workspace = std::max(attention, mlp) + sampling;
  return r;
}

}  // namespace grpo::core::memory_terms
