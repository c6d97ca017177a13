#include "grpo/trainer/model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "collective_autograd.h"
#include "grpo/trainer/expert_parallel.h"

namespace grpo::trainer {
namespace {

constexpr double kInitStd = 0.02;  // Hugging Face's initializer_range for Qwen models

at::Tensor rotate_half(const at::Tensor& x) {
  const std::int64_t half = x.size(-1) / 2;
  at::Tensor x1 = x.narrow(-1, 0, half);
  at::Tensor x2 = x.narrow(-1, half, half);
  return at::cat({-x2, x1}, -1);
}

// x [B, heads, T, D]; cos/sin [B, T, D].
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos.unsqueeze(1) + rotate_half(x) * sin.unsqueeze(1);
}

}  // namespace

Linear::Linear(std::int64_t in, std::int64_t out, bool with_bias,
               const at::TensorOptions& options) {
  weight = register_parameter("weight", at::empty({out, in}, options));
  if (with_bias) bias = register_parameter("bias", at::zeros({out}, options));
}

at::Tensor Linear::forward(const at::Tensor& x) const {
  return at::linear(x, weight, bias);
}

Embedding::Embedding(std::int64_t vocab, std::int64_t dim, const at::TensorOptions& options,
                     const TensorShard& tp_in)
    : vocab_begin(tp_in.rank * (vocab / tp_in.size)), tp(tp_in) {
  weight = register_parameter("weight", at::empty({vocab / tp.size, dim}, options));
}

at::Tensor Embedding::forward(const at::Tensor& tokens) const {
  if (!tp.active()) return at::embedding(weight, tokens);
  // Megatron's VocabParallelEmbedding: look up the rows this rank holds, zeros for the others,
  // and sum over the group.
  at::Tensor here = (tokens >= vocab_begin) & (tokens < vocab_begin + weight.size(0));
  at::Tensor local = at::where(here, tokens - vocab_begin, at::zeros_like(tokens));
  at::Tensor rows = at::embedding(weight, local) * here.unsqueeze(-1).to(weight.scalar_type());
  // Under sequence parallelism the caller reduce-scatters the partial rows (sp_reduce_scatter).
  return tp.sp() ? rows : reduce_from_tp(rows, tp);
}

RmsNorm::RmsNorm(std::int64_t dim, double eps_in, const at::TensorOptions& options) : eps(eps_in) {
  weight = register_parameter("weight", at::ones({dim}, options));
}

at::Tensor RmsNorm::forward(const kernels::Ops& ops, const at::Tensor& x) const {
  return ops.rms_norm(x, weight, eps);
}

SwiGlu::SwiGlu(std::int64_t hidden, std::int64_t ffn, const at::TensorOptions& options,
               const TensorShard& tp_in)
    : tp(tp_in) {
  const std::int64_t local = ffn / tp.size;
  gate_proj = register_module("gate_proj", std::make_shared<Linear>(hidden, local, false, options));
  up_proj = register_module("up_proj", std::make_shared<Linear>(hidden, local, false, options));
  down_proj = register_module("down_proj", std::make_shared<Linear>(local, hidden, false, options));
}

at::Tensor SwiGlu::forward(const at::Tensor& x) const {
  // Column-parallel gate/up, row-parallel down (identities without TP). Under sequence
  // parallelism the caller gathers x and reduce-scatters the partial output.
  const at::Tensor xt = tp.sp() ? x : copy_to_tp(x, tp);
  at::Tensor y = down_proj->forward(at::silu(gate_proj->forward(xt)) * up_proj->forward(xt));
  return tp.sp() ? y : reduce_from_tp(y, tp);
}

Attention::Attention(const core::ModelSpec& spec, const at::TensorOptions& options,
                     const TensorShard& tp_in)
    : heads(spec.num_attention_heads / tp_in.size),
      kv_heads(std::max<std::int64_t>(1, spec.num_kv_heads / tp_in.size)),
      head_dim(spec.head_dim),
      tp(tp_in) {
  const std::int64_t h = spec.hidden_size;
  const std::int64_t q_width = heads * head_dim, kv_width = kv_heads * head_dim;
  q_proj = register_module("q_proj", std::make_shared<Linear>(h, q_width, spec.qkv_bias, options));
  k_proj = register_module("k_proj", std::make_shared<Linear>(h, kv_width, spec.qkv_bias, options));
  v_proj = register_module("v_proj", std::make_shared<Linear>(h, kv_width, spec.qkv_bias, options));
  o_proj = register_module("o_proj", std::make_shared<Linear>(q_width, h, false, options));
  if (spec.qk_norm) {
    q_norm =
        register_module("q_norm", std::make_shared<RmsNorm>(head_dim, spec.rms_norm_eps, options));
    k_norm =
        register_module("k_norm", std::make_shared<RmsNorm>(head_dim, spec.rms_norm_eps, options));
  }
}

at::Tensor Attention::forward(const kernels::Ops& ops, const at::Tensor& x, const at::Tensor& cos,
                              const at::Tensor& sin, const at::Tensor& mask, KvCache* cache,
                              std::int64_t layer) const {
  const std::int64_t b = x.size(0);
  const std::int64_t t = x.size(1);
  // Column-parallel q, k, v (under sequence parallelism x is already gathered: DecoderLayer).
  const at::Tensor xt = tp.sp() ? x : copy_to_tp(x, tp);
  at::Tensor q = q_proj->forward(xt).view({b, t, heads, head_dim});
  at::Tensor k = k_proj->forward(xt).view({b, t, kv_heads, head_dim});
  at::Tensor v = v_proj->forward(xt).view({b, t, kv_heads, head_dim});
  if (q_norm) {
    // The norms are replicated but see only this rank's heads: their gradients are summed over
    // TP (copy_to_tp on the weight), so every rank holds the same gradient.
    q = ops.rms_norm(q, copy_to_tp(q_norm->weight, tp), q_norm->eps);
    k = ops.rms_norm(k, copy_to_tp(k_norm->weight, tp), k_norm->eps);
  }
  q = apply_rope(q.transpose(1, 2), cos, sin);  // [B, H, T, D]
  k = apply_rope(k.transpose(1, 2), cos, sin);  // [B, KV, T, D]
  v = v.transpose(1, 2);
  if (cache != nullptr) {
    const auto l = static_cast<std::size_t>(layer);
    cache->keys[l].narrow(2, cache->length, t).copy_(k);
    cache->values[l].narrow(2, cache->length, t).copy_(v);
    k = cache->keys[l].narrow(2, 0, cache->length + t);
    v = cache->values[l].narrow(2, 0, cache->length + t);
  }
  const std::int64_t tk = k.size(2);
  const std::int64_t groups = heads / kv_heads;
  // Grouped-query attention without repeating k/v: query heads [kv*G + g] share kv head kv.
  at::Tensor qg = q.reshape({b, kv_heads, groups * t, head_dim});
  at::Tensor scores = at::matmul(qg, k.transpose(-1, -2)) * (1.0 / std::sqrt(double(head_dim)));
  scores = scores.view({b, kv_heads, groups, t, tk}) + mask.unsqueeze(1);
  at::Tensor probs = at::softmax(scores.to(at::kFloat), -1).to(q.scalar_type());
  at::Tensor out = at::matmul(probs.view({b, kv_heads, groups * t, tk}), v);
  out = out.view({b, heads, t, head_dim}).transpose(1, 2).reshape({b, t, heads * head_dim});
  at::Tensor y = o_proj->forward(out);  // row-parallel o
  return tp.sp() ? y : reduce_from_tp(y, tp);
}

MoeBlock::MoeBlock(const core::ModelSpec& spec, const at::TensorOptions& options,
                   const ExpertShard& shard, const TensorShard& tp_in)
    : tp(tp_in),
      num_experts(spec.num_experts),
      top_k(spec.experts_per_token),
      expert_begin(shard.begin),
      ep_group(shard.group),
      expert_tp(shard.tensor_parallel && tp_in.size > 1),
      norm_topk_prob(spec.norm_topk_prob),
      load(static_cast<std::size_t>(spec.num_experts), 0) {
  const std::int64_t h = spec.hidden_size;
  gate = register_module("gate", std::make_shared<Linear>(h, spec.num_experts, false, options));
  // Named by global index, so a shard's parameters carry the unsharded model's names.
  auto holder = register_module("experts", std::make_shared<torch::nn::Module>("Experts"));
  const std::int64_t end = shard.end < 0 ? spec.num_experts : shard.end;
  for (std::int64_t e = shard.begin; e < end; ++e) {
    experts.push_back(std::make_shared<SwiGlu>(h, spec.moe_ffn_hidden_size, options,
                                               expert_tp ? tp : TensorShard{}));
    holder->register_module(std::to_string(e), experts.back());
  }
  if (spec.num_shared_experts > 0) {
    // Qwen2-MoE has one shared expert whose width is the sum of the shared experts' widths.
    // Split over TP like a dense MLP (Megatron-Core's SharedExpertMLP).
    shared_expert = register_module(
        "shared_expert",
        std::make_shared<SwiGlu>(h, spec.num_shared_experts * spec.shared_expert_ffn_hidden_size,
                                 options, tp));
    if (spec.shared_expert_gate) {
      shared_expert_gate =
          register_module("shared_expert_gate", std::make_shared<Linear>(h, 1, false, options));
    }
  }
}

at::Tensor MoeBlock::forward(const kernels::Ops& ops, const at::Tensor& x, const at::Tensor& valid,
                             at::Tensor* aux, const SequenceSplit* split) {
  at::Tensor router_logits = gate->forward(x);
  if (force_bias != 0.0) {
    at::Tensor bias = at::zeros({num_experts}, router_logits.options());
    bias[0] = force_bias;
    router_logits = router_logits + bias;
  }
  kernels::RouterOutput r = ops.route(router_logits, top_k, norm_topk_prob, valid);
  at::Tensor out = expert_tp             ? experts_tensor_parallel(x, r)
                   : ep_group != nullptr ? experts_parallel(x, r)
                                         : experts_local(x, r);
  if (shared_expert) {
    // Under sequence parallelism the (TP-split) shared expert runs on the gathered sequence.
    at::Tensor s =
        split == nullptr
            ? shared_expert->forward(x)
            : sp_reduce_scatter(shared_expert->forward(sp_gather(x, *split, tp)), *split, tp);
    if (shared_expert_gate) s = at::sigmoid(shared_expert_gate->forward(x)) * s;
    out = out + s;
  }

  // Switch-style load-balancing loss over the real tokens, as Hugging Face's
  // load_balancing_loss_func: E * sum_i f_i * P_i, f_i = fraction of tokens routed to i (the f_i
  // sum to top_k), P_i = mean router probability of i. The router counted the valid tokens' pairs.
  at::Tensor probs = r.probs;
  if (valid.defined()) probs = probs.index_select(0, at::nonzero(valid).squeeze(1));
  if (tp.sp()) {
    sequence_parallel_aux(probs, r.tokens_per_expert, aux);
    return out;
  }
  const std::int64_t real = probs.size(0);
  if (real > 0) {
    const at::Tensor& counts = r.tokens_per_expert;
    at::Tensor f = counts.to(probs.scalar_type()) / static_cast<double>(real);
    *aux = *aux + static_cast<double>(num_experts) * (f * probs.mean(0)).sum();
    if (collect_load) {
      at::Tensor c = counts.to(at::kLong).cpu();
      const auto* p = c.data_ptr<std::int64_t>();
      for (std::size_t e = 0; e < load.size(); ++e) load[e] += p[e];
    }
  }
  return out;
}

void MoeBlock::sequence_parallel_aux(const at::Tensor& probs, const at::Tensor& counts,
                                     at::Tensor* aux) {
  // The rows of one micro batch are spread over the TP group: f_i and P_i are the whole micro
  // batch's (counts, token count and probability sums summed over the group; the probability sum
  // differentiably, reduce_from_tp), so every rank adds the single-rank run's loss.
  at::Tensor c = counts.to(at::kLong).cpu();
  if (collect_load) {
    const auto* p = c.data_ptr<std::int64_t>();
    for (std::size_t e = 0; e < load.size(); ++e) load[e] += p[e];
  }
  at::Tensor totals = at::cat({c, at::tensor({probs.size(0)}, at::kLong)});
  check_collective(tp.group->allreduce_sum(totals), "sequence-parallel");
  const std::int64_t real = totals[num_experts].item<std::int64_t>();
  at::Tensor prob_sum = reduce_from_tp(probs.sum(0), tp);
  if (real == 0) return;
  at::Tensor f = totals.narrow(0, 0, num_experts).to(probs.device()).to(probs.scalar_type()) /
                 static_cast<double>(real);
  *aux = *aux + static_cast<double>(num_experts) *
                    (f * (prob_sum / static_cast<double>(real))).sum().to(aux->scalar_type());
}

at::Tensor MoeBlock::experts_local(const at::Tensor& x, const kernels::RouterOutput& r) const {
  // The router's permutation groups the (token, slot) pairs by expert: one gather, each expert on
  // its contiguous slice, one scatter-add (in expert order per token, as a per-expert loop adds).
  at::Tensor offsets = r.expert_offsets.to(at::kCPU);
  const auto* off = offsets.data_ptr<std::int64_t>();
  at::Tensor x_sorted = x.index_select(0, r.sorted_tokens);
  at::Tensor w_sorted =
      r.weights.reshape({-1}).index_select(0, r.sorted_pairs).to(x.scalar_type()).unsqueeze(1);
  std::vector<at::Tensor> ys;
  for (std::int64_t e = 0; e < num_experts; ++e) {
    const std::int64_t begin = off[e];
    const std::int64_t count = off[e + 1] - begin;
    if (count == 0) continue;
    ys.push_back(experts[static_cast<std::size_t>(e)]->forward(x_sorted.narrow(0, begin, count)));
  }
  at::Tensor out = at::zeros_like(x);
  return ys.empty() ? out : out.index_add(0, r.sorted_tokens, at::cat(ys) * w_sorted);
}

at::Tensor MoeBlock::experts_tensor_parallel(const at::Tensor& x,
                                             const kernels::RouterOutput& r) const {
  // Megatron-Core's expert tensor parallelism (ETP = TP): the TP group's rows, their routing
  // weights (differentiably) and chosen experts are all-gathered, every rank runs its slice of
  // the experts (column-parallel gate/up, row-parallel down) on all of them, over the EP group
  // when there is one, and the partial outputs are reduce-scattered back onto each rank's rows.
  // The router, its aux loss and the load counts stay with the rank's own rows.
  Communicator& group = *tp.group;
  kernels::RouterOutput all;
  all.weights = gather_rows(r.weights, group);
  kernels::group_by_expert(gather_rows(r.indices, group), num_experts, &all);
  const at::Tensor rows = gather_rows(x, group);
  const at::Tensor partial =
      ep_group != nullptr ? experts_parallel(rows, all) : experts_local(rows, all);
  return reduce_scatter_rows(partial, group);
}

at::Tensor MoeBlock::experts_parallel(const at::Tensor& x, const kernels::RouterOutput& r) const {
  // Megatron-Core's all-to-all dispatcher: the (token, slot) pairs, grouped by expert (the router's
  // permutation), go to the rank holding their expert; each rank runs its experts on what it
  // received and sends the outputs back, where they are weighted and added onto their tokens.
  // The ranks of the group hold equal, consecutive ranges of experts (ParallelState), so grouping
  // by expert is grouping by destination.
  Communicator& group = *ep_group;
  const int ranks = group.world_size();
  const auto local = static_cast<std::int64_t>(experts.size());
  at::Tensor offsets = r.expert_offsets.to(at::kCPU);
  const auto* off = offsets.data_ptr<std::int64_t>();
  // Pairs per expert, then each rank's pairs for my experts: from[g * local + j].
  at::Tensor from = all_to_all_equal(
      offsets.narrow(0, 1, num_experts) - offsets.narrow(0, 0, num_experts), group);
  const auto* fr = from.data_ptr<std::int64_t>();
  std::vector<std::int64_t> send(static_cast<std::size_t>(ranks));
  std::vector<std::int64_t> recv(static_cast<std::size_t>(ranks));
  for (int g = 0; g < ranks; ++g) {
    send[static_cast<std::size_t>(g)] = off[(g + 1) * local] - off[g * local];
    for (std::int64_t j = 0; j < local; ++j) recv[static_cast<std::size_t>(g)] += fr[g * local + j];
  }
  at::Tensor x_recv = all_to_all_rows(x.index_select(0, r.sorted_tokens), send, recv, group);

  // The received rows come source by source, each source's grouped by expert: regroup them by
  // expert (source order within an expert), run each expert on its slice, and put the outputs
  // back in the received order for the return trip.
  std::vector<std::int64_t> order;
  std::vector<std::int64_t> per_expert(static_cast<std::size_t>(local), 0);
  order.reserve(static_cast<std::size_t>(x_recv.size(0)));
  // One cursor per source: where its rows for the next expert begin in the received order.
  std::vector<std::int64_t> cursor(static_cast<std::size_t>(ranks), 0);
  for (int g = 1; g < ranks; ++g) {
    cursor[static_cast<std::size_t>(g)] =
        cursor[static_cast<std::size_t>(g - 1)] + recv[static_cast<std::size_t>(g - 1)];
  }
  for (std::int64_t j = 0; j < local; ++j) {
    for (int g = 0; g < ranks; ++g) {
      const std::int64_t n = fr[g * local + j];
      std::int64_t& at = cursor[static_cast<std::size_t>(g)];
      for (std::int64_t t = 0; t < n; ++t) order.push_back(at + t);
      at += n;
      per_expert[static_cast<std::size_t>(j)] += n;
    }
  }
  at::Tensor y_recv = x_recv * 0.0;  // no rows received: still part of the graph (a collective)
  if (!order.empty()) {
    at::Tensor perm = at::tensor(order, at::kLong).to(x.device());
    at::Tensor grouped = x_recv.index_select(0, perm);
    std::vector<at::Tensor> ys;
    std::int64_t begin = 0;
    for (std::int64_t j = 0; j < local; ++j) {
      const std::int64_t n = per_expert[static_cast<std::size_t>(j)];
      if (n > 0) {
        ys.push_back(experts[static_cast<std::size_t>(j)]->forward(grouped.narrow(0, begin, n)));
      }
      begin += n;
    }
    std::vector<std::int64_t> back(order.size());  // the inverse permutation
    for (std::size_t i = 0; i < order.size(); ++i) {
      back[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
    }
    y_recv = at::cat(ys).index_select(0, at::tensor(back, at::kLong).to(x.device()));
  }
  at::Tensor y = all_to_all_rows(y_recv, recv, send, group);
  at::Tensor w =
      r.weights.reshape({-1}).index_select(0, r.sorted_pairs).to(x.scalar_type()).unsqueeze(1);
  return at::zeros_like(x).index_add(0, r.sorted_tokens, y * w);
}

DecoderLayer::DecoderLayer(const core::ModelSpec& spec, std::int64_t index_in,
                           const at::TensorOptions& options, const ExpertShard& shard,
                           const TensorShard& tp)
    : index(index_in) {
  input_layernorm = register_module(
      "input_layernorm", std::make_shared<RmsNorm>(spec.hidden_size, spec.rms_norm_eps, options));
  self_attn = register_module("self_attn", std::make_shared<Attention>(spec, options, tp));
  post_attention_layernorm =
      register_module("post_attention_layernorm",
                      std::make_shared<RmsNorm>(spec.hidden_size, spec.rms_norm_eps, options));
  if (spec.is_moe() && index >= spec.first_k_dense_layers) {
    moe = register_module("mlp", std::make_shared<MoeBlock>(spec, options, shard, tp));
  } else {
    mlp = register_module(
        "mlp", std::make_shared<SwiGlu>(spec.hidden_size, spec.ffn_hidden_size, options, tp));
  }
}

at::Tensor DecoderLayer::forward(const kernels::Ops& ops, const at::Tensor& x,
                                 const at::Tensor& cos, const at::Tensor& sin,
                                 const at::Tensor& mask, const at::Tensor& valid, KvCache* cache,
                                 at::Tensor* aux, const SequenceSplit* split) {
  if (split != nullptr) {
    // Sequence parallelism: x holds this rank's rows; the norms, the residual adds and the MoE
    // layer run on them, the attention and a dense MLP on the gathered sequence.
    const TensorShard& tp = self_attn->tp;
    at::Tensor a = self_attn->forward(ops, sp_gather(input_layernorm->forward(ops, x), *split, tp),
                                      cos, sin, mask, cache, index);
    at::Tensor h = x + sp_reduce_scatter(a, *split, tp);
    at::Tensor normed = post_attention_layernorm->forward(ops, h);
    if (moe) return h + moe->forward(ops, normed, valid, aux, split);
    return h + sp_reduce_scatter(mlp->forward(sp_gather(normed, *split, tp)), *split, tp);
  }
  at::Tensor h =
      x + self_attn->forward(ops, input_layernorm->forward(ops, x), cos, sin, mask, cache, index);
  at::Tensor normed = post_attention_layernorm->forward(ops, h);
  if (moe) {
    const std::int64_t hidden = normed.size(-1);
    at::Tensor flat_valid = valid.defined() ? valid.reshape({-1}) : at::Tensor();
    at::Tensor y = moe->forward(ops, normed.reshape({-1, hidden}), flat_valid, aux);
    return h + y.view(normed.sizes());
  }
  return h + mlp->forward(normed);
}

Backbone::Backbone(const core::ModelSpec& spec, const at::TensorOptions& options,
                   const ExpertShard& shard, const TensorShard& tp) {
  embed_tokens = register_module(
      "embed_tokens", std::make_shared<Embedding>(spec.vocab_size, spec.hidden_size, options, tp));
  auto list = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < spec.num_layers; ++i) {
    layers.push_back(std::make_shared<DecoderLayer>(spec, i, options, shard, tp));
    list->push_back(layers.back());
  }
  norm = register_module("norm",
                         std::make_shared<RmsNorm>(spec.hidden_size, spec.rms_norm_eps, options));
}

QwenModel::QwenModel(const core::ModelSpec& spec, const kernels::Ops& ops,
                     const at::TensorOptions& options, at::Generator* init_gen,
                     const ExpertShard& shard, const TensorShard& tp)
    : spec_(spec), ops_(ops), shard_(shard), tp_(tp) {
  if (shard_.end < 0) shard_.end = spec.num_experts;
  model_ = register_module("model", std::make_shared<Backbone>(spec, options, shard_, tp_));
  if (!spec.tied_embeddings) {
    lm_head_ = register_module(
        "lm_head",
        std::make_shared<Linear>(spec.hidden_size, spec.vocab_size / tp_.size, false, options));
  }
  at::TensorOptions fopts =
      at::TensorOptions()
          .dtype(at::kFloat)
          .device(options.device().is_meta() ? at::Device(at::kCPU) : options.device());
  inv_freq_ = 1.0 / at::pow(spec.rope_theta,
                            at::arange(0, spec.head_dim, 2, fopts) / double(spec.head_dim));

  if (options.device().is_meta()) return;
  torch::NoGradGuard no_grad;
  auto init = [&](const std::string& name, at::Tensor p) {
    const bool is_norm = name.find("norm.weight") != std::string::npos;
    const bool is_bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (is_norm) {
      p.fill_(1.0);
    } else if (is_bias) {
      p.zero_();
    } else if (init_gen != nullptr) {
      p.normal_(0.0, kInitStd, *init_gen);
    } else {
      p.normal_(0.0, kInitStd);
    }
  };
  if (!expert_parallel() && !tp_.active()) {
    for (auto& [name, p] : named_params()) init(name, p);
    return;
  }
  // Walk the unsharded model's parameters in order, drawing each whole (into a scratch tensor
  // unless this rank holds all of it), so the generator advances exactly as it does for the whole
  // model, and keep the part this rank holds.
  std::map<std::string, at::Tensor> mine;
  for (auto& [name, p] : named_params()) mine.emplace(name, p);
  ShardLayout layout;
  layout.tp_rank = tp_.rank;
  layout.tp_size = tp_.size;
  layout.expert_tp = shard_.tensor_parallel;
  const ShardingPlan plan(spec, whole_shapes(spec, ops), layout);
  for (const Placement& f : plan.params()) {
    auto it = mine.find(f.name);
    // The modules size themselves from the shards; the plan is the authority on what a rank
    // holds, so a module that disagrees with it is a bug caught here, not a silent mis-slice.
    if (it != mine.end() && it->second.sizes().vec() != f.own_shape()) {
      throw std::logic_error("parameter " + f.name + " is built with another shape than the " +
                             "sharding plan gives this rank");
    }
    if (it != mine.end() && !f.own) {
      init(f.name, it->second);
      continue;
    }
    at::Tensor full = at::empty(f.shape, options.device(inv_freq_.device()));
    init(f.name, full);
    if (it != mine.end()) it->second.copy_(full.narrow(f.own->dim, f.own->offset, f.own->length));
  }
}

bool QwenModel::all_ranks(bool mine) const {
  return shard_.group == nullptr ? mine : trainer::all_ranks(mine, *shard_.group);
}

ModelOutput QwenModel::forward(const at::Tensor& tokens, const at::Tensor& positions,
                               const at::Tensor& key_valid, const at::Tensor& valid,
                               KvCache* cache) {
  return run_layers(tokens, positions, key_valid, valid, cache, at::Tensor(), 0, spec_.num_layers);
}

ModelOutput QwenModel::forward_stage(const at::Tensor& tokens, const at::Tensor& positions,
                                     const at::Tensor& valid, const at::Tensor& input,
                                     std::int64_t begin, std::int64_t end) {
  return run_layers(tokens, positions, valid, valid, nullptr, input, begin, end);
}

ModelOutput QwenModel::run_layers(const at::Tensor& tokens, const at::Tensor& positions,
                                  const at::Tensor& key_valid, const at::Tensor& valid,
                                  KvCache* cache, const at::Tensor& input, std::int64_t begin,
                                  std::int64_t end) {
  const std::int64_t t = tokens.size(1);
  const std::int64_t past = cache != nullptr ? cache->length : 0;
  const std::int64_t tk = past + t;
  // Under sequence parallelism the layers hold this rank's rows of the flattened sequence.
  const bool sp = tp_.sp();
  const SequenceSplit split = sequence_split(tokens.size(0), t, tp_);
  at::Tensor x = input;
  if (begin == 0) {
    x = model_->embed_tokens->forward(tokens);
    if (sp) x = sp_reduce_scatter(x, split, tp_);
  }
  const at::Tensor layer_valid = sp ? sp_valid(valid, split, tp_, x.device()) : valid;

  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq_.to(x.device());
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos().to(x.scalar_type());
  at::Tensor sin = emb.sin().to(x.scalar_type());

  // Query i (slot past + i) sees key slot j when j <= past + i and the key is a real token.
  at::Tensor qpos = at::arange(past, tk, positions.options()).unsqueeze(1);
  at::Tensor kpos = at::arange(0, tk, positions.options()).unsqueeze(0);
  at::Tensor allowed = (kpos <= qpos).unsqueeze(0) & key_valid.unsqueeze(1);  // [B, T, Tk]
  at::Tensor mask =
      at::where(allowed, at::zeros({}, x.options()), at::full({}, kMaskValue, x.options()))
          .unsqueeze(1);  // [B, 1, T, Tk]

  at::Tensor aux = at::zeros({}, x.options());
  for (std::int64_t i = begin; i < end; ++i) {
    x = model_->layers[static_cast<std::size_t>(i)]->forward(ops_, x, cos, sin, mask, layer_valid,
                                                             cache, &aux, sp ? &split : nullptr);
  }
  if (cache != nullptr) cache->length += t;
  if (end < spec_.num_layers) return ModelOutput{x, aux};  // to the next pipeline stage
  at::Tensor hidden = model_->norm->forward(ops_, x);
  // The LM head and the loss see the whole sequence (their input gradient is whole already).
  if (sp) hidden = sp_gather_whole_grad(hidden, split, tp_);
  return ModelOutput{hidden, aux};
}

at::Tensor QwenModel::logits(const at::Tensor& hidden) const {
  return gather_last_dim(at::matmul(hidden, lm_head_weight().t()).to(at::kFloat), tp_);
}

kernels::TokenLogProbs QwenModel::token_logprobs(const at::Tensor& hidden, const at::Tensor& tokens,
                                                 double temperature, bool with_entropy) const {
  if (!tp_.active()) {
    return ops_.token_logprobs(hidden, lm_head_weight(), tokens, temperature, with_entropy);
  }
  return vocab_parallel_logprobs(hidden, lm_head_weight(), tokens, temperature, with_entropy,
                                 /*entropy_grad=*/true, model_->embed_tokens->vocab_begin, tp_);
}

kernels::PolicyLossOutputs QwenModel::policy_loss(const at::Tensor& hidden,
                                                  const kernels::PolicyLossInputs& in,
                                                  const kernels::PolicyLossParams& params) const {
  if (!tp_.active()) return ops_.policy_loss(hidden, lm_head_weight(), in, params);
  const kernels::TokenLogProbs lp =
      vocab_parallel_logprobs(hidden, lm_head_weight(), in.tokens, params.temperature, true,
                              params.entropy_coeff != 0.0, model_->embed_tokens->vocab_begin, tp_);
  return kernels::policy_loss_from_logprobs(lp.logprobs, lp.entropy.mean(), in, params);
}

const at::Tensor& QwenModel::lm_head_weight() const {
  return lm_head_ ? lm_head_->weight : model_->embed_tokens->weight;
}

KvCache QwenModel::make_cache(std::int64_t batch, std::int64_t capacity) const {
  KvCache cache;
  cache.capacity = capacity;
  const at::TensorOptions opts = lm_head_weight().options();
  for (std::int64_t i = 0; i < spec_.num_layers; ++i) {
    const std::int64_t kv = model_->layers[static_cast<std::size_t>(i)]->self_attn->kv_heads;
    cache.keys.push_back(at::zeros({batch, kv, capacity, spec_.head_dim}, opts));
    cache.values.push_back(at::zeros({batch, kv, capacity, spec_.head_dim}, opts));
  }
  return cache;
}

void QwenModel::set_collect_expert_load(bool on) {
  for (auto& layer : model_->layers) {
    if (layer->moe) layer->moe->collect_load = on;
  }
}

std::vector<ExpertLoad> QwenModel::take_expert_load() {
  std::vector<ExpertLoad> out;
  for (auto& layer : model_->layers) {
    if (!layer->moe) continue;
    out.push_back(ExpertLoad{layer->index, layer->moe->load});
    std::fill(layer->moe->load.begin(), layer->moe->load.end(), 0);
  }
  return out;
}

void QwenModel::set_router_bias_fault(double bias) {
  for (auto& layer : model_->layers) {
    if (layer->moe) layer->moe->force_bias = bias;
  }
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> QwenModel::whole_shapes(
    const core::ModelSpec& spec, const kernels::Ops& ops) {
  const QwenModel whole(spec, ops, at::TensorOptions().dtype(at::kFloat).device(at::kMeta),
                        nullptr);
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
  for (const auto& [name, meta] : whole.named_params()) out.emplace_back(name, meta.sizes().vec());
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> QwenModel::named_params() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    out.emplace_back(item.key(), item.value());
  }
  return out;
}

}  // namespace grpo::trainer
