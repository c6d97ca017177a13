#include "grpo/trainer/grpo.h"

#include <charconv>
#include <cmath>

#include "grpo/trainer/rollout.h"

namespace grpo::trainer {

at::Tensor group_advantages(const at::Tensor& rewards, std::int64_t n, bool norm_by_std,
                            double eps) {
  at::Tensor r = rewards.to(at::kFloat).view({-1, n});
  if (n == 1) return at::zeros_like(rewards, at::kFloat);
  at::Tensor centred = r - r.mean(1, /*keepdim=*/true);
  if (norm_by_std) centred = centred / (r.std(1, /*unbiased=*/true, /*keepdim=*/true) + eps);
  return centred.reshape({-1});
}

SequenceBatch SequenceBatch::slice(std::int64_t begin, std::int64_t end) const {
  const std::int64_t n = end - begin;
  return SequenceBatch{tokens.narrow(0, begin, n),         valid.narrow(0, begin, n),
                       positions.narrow(0, begin, n),      response.narrow(0, begin, n),
                       response_valid.narrow(0, begin, n), prompt_len};
}

SequenceBatch make_sequence_batch(const at::Tensor& prompt, const at::Tensor& prompt_valid,
                                  const at::Tensor& response, const at::Tensor& response_valid) {
  SequenceBatch b;
  b.tokens = at::cat({prompt, response}, 1);
  b.valid = at::cat({prompt_valid, response_valid}, 1);
  b.positions = positions_from_valid(b.valid);
  b.response = response;
  b.response_valid = response_valid;
  b.prompt_len = prompt.size(1);
  return b;
}

ResponseStates response_states(QwenModel& model, const SequenceBatch& batch) {
  return response_states(
      model.forward(batch.tokens, batch.positions, batch.valid, batch.valid, nullptr), batch);
}

ResponseStates response_states(const ModelOutput& out, const SequenceBatch& batch) {
  const std::int64_t r = batch.response.size(1);
  const std::int64_t h = out.hidden.size(-1);
  at::Tensor states = out.hidden.narrow(1, batch.prompt_len - 1, r).reshape({-1, h});
  ResponseStates s;
  s.index = at::nonzero(batch.response_valid.reshape({-1})).squeeze(1);
  s.hidden = states.index_select(0, s.index);
  s.tokens = batch.response.reshape({-1}).index_select(0, s.index);
  s.aux_loss = out.aux_loss;
  return s;
}

at::Tensor sequence_logprobs(QwenModel& model, const SequenceBatch& batch, std::int64_t micro_rows,
                             double temperature,
                             const std::function<void(std::int64_t)>& after_micro) {
  torch::NoGradGuard no_grad;
  const std::int64_t rows = batch.rows();
  const std::int64_t r = batch.response.size(1);
  at::Tensor out = at::zeros({rows, r}, at::kFloat);
  for (std::int64_t begin = 0; begin < rows; begin += micro_rows) {
    const std::int64_t end = std::min(rows, begin + micro_rows);
    SequenceBatch mb = batch.slice(begin, end);
    ResponseStates s = response_states(model, mb);
    at::Tensor lp =
        model.token_logprobs(s.hidden, s.tokens, temperature, /*with_entropy=*/false).logprobs;
    at::Tensor flat = at::zeros({(end - begin) * r}, at::kFloat);
    flat.index_copy_(0, s.index, lp.to(at::kFloat));
    out.narrow(0, begin, end - begin).copy_(flat.view({end - begin, r}));
    if (after_micro) after_micro(end);
  }
  return out;
}

AdamW::AdamW(NamedTensors params, std::vector<at::Tensor> masters)
    : params_(std::move(params)), masters_(std::move(masters)) {
  TORCH_CHECK(masters_.empty() || masters_.size() == params_.size(),
              "AdamW: one master weight per parameter");
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    // The fp32 main gradient: AccumulateGrad adds each backward's gradient into a defined .grad
    // in place, so it stays fp32 whatever the parameter's dtype.
    params_[i].second.mutable_grad() = at::zeros_like(masters_[i]);
  }
  reset();
}

void AdamW::reset() {
  exp_avg_.clear();
  exp_avg_sq_.clear();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& w = masters_.empty() ? params_[i].second : masters_[i];
    exp_avg_.push_back(at::zeros_like(w));
    exp_avg_sq_.push_back(at::zeros_like(w));
  }
  steps_ = 0;
}

void AdamW::zero_grad() {
  for (auto& [name, p] : params_) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
}

void AdamW::step(const AdamWOptions& o) {
  torch::NoGradGuard no_grad;
  ++steps_;
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(steps_));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(steps_));
  const double step_size = o.lr / bc1;
  const double bc2_sqrt = std::sqrt(bc2);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = masters_.empty() ? params_[i].second : masters_[i];
    const at::Tensor& model = params_[i].second;
    at::Tensor g = model.grad().defined() ? model.grad() : at::zeros_like(p);
    p.mul_(1.0 - o.lr * o.weight_decay);
    exp_avg_[i].mul_(o.beta1).add_(g, 1.0 - o.beta1);
    exp_avg_sq_[i].mul_(o.beta2).addcmul_(g, g, 1.0 - o.beta2);
    at::Tensor denom = (exp_avg_sq_[i].sqrt() / bc2_sqrt).add_(o.eps);
    p.addcdiv_(exp_avg_[i], denom, -step_size);
  }
  sync_params();
}

NamedTensors AdamW::weights() const {
  if (masters_.empty()) return params_;
  NamedTensors out;
  for (std::size_t i = 0; i < params_.size(); ++i) out.emplace_back(params_[i].first, masters_[i]);
  return out;
}

void AdamW::sync_params() {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < masters_.size(); ++i) params_[i].second.copy_(masters_[i]);
}

std::int64_t AdamW::master_bytes() const {
  std::int64_t bytes = 0;
  for (const at::Tensor& m : masters_) {
    bytes += static_cast<std::int64_t>(m.numel()) * static_cast<std::int64_t>(m.element_size());
  }
  return bytes;
}

NamedTensors AdamW::state() const {
  NamedTensors out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back("exp_avg." + params_[i].first, exp_avg_[i]);
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back("exp_avg_sq." + params_[i].first, exp_avg_sq_[i]);
  }
  return out;
}

core::Status AdamW::load_state(const NamedTensors& state, std::int64_t steps) {
  std::map<std::string, at::Tensor> by_name(state.begin(), state.end());
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    for (auto [prefix, dst] :
         {std::pair{"exp_avg.", &exp_avg_[i]}, std::pair{"exp_avg_sq.", &exp_avg_sq_[i]}}) {
      auto it = by_name.find(prefix + params_[i].first);
      if (it == by_name.end() || !it->second.sizes().equals(dst->sizes())) {
        return core::make_error(
            core::ErrorKind::kInvalidValue,
            "optimizer state lacks or mismatches " + std::string(prefix) + params_[i].first);
      }
      dst->copy_(it->second);
    }
  }
  steps_ = steps;
  return core::ok_status();
}

core::Status in_buckets(const std::vector<at::Tensor>& tensors, std::int64_t bucket_bytes,
                        const std::function<core::Status(at::Tensor&)>& f) {
  std::size_t i = 0;
  while (i < tensors.size()) {
    std::size_t j = i;
    std::int64_t bytes = 0;
    std::vector<at::Tensor> flat_parts;
    while (j < tensors.size() &&
           (j == i || bytes + static_cast<std::int64_t>(tensors[j].nbytes()) <= bucket_bytes)) {
      bytes += static_cast<std::int64_t>(tensors[j].nbytes());
      flat_parts.push_back(tensors[j].reshape({-1}));
      ++j;
    }
    at::Tensor bucket = at::cat(flat_parts);
    GRPO_TRY_STATUS(f(bucket));
    std::int64_t off = 0;
    for (std::size_t k = i; k < j; ++k) {
      const std::int64_t n = tensors[k].numel();
      tensors[k].copy_(bucket.narrow(0, off, n).view(tensors[k].sizes()));
      off += n;
    }
    i = j;
  }
  return core::ok_status();
}

namespace {

// Sums `grads` over `comm` in buckets of about bucket_bytes and divides them by `divisor`.
core::Status reduce_buckets(const std::vector<at::Tensor>& grads, Communicator* comm,
                            std::int64_t bucket_bytes, double divisor) {
  return in_buckets(grads, bucket_bytes, [&](at::Tensor& bucket) -> core::Status {
    if (comm != nullptr) GRPO_TRY_STATUS(comm->allreduce_sum(bucket));
    bucket.div_(divisor);
    return core::ok_status();
  });
}

at::Tensor squared_norm(const std::vector<at::Tensor>& grads) {
  at::Tensor sum = at::zeros({1}, at::kDouble);
  for (const at::Tensor& g : grads) sum += g.to(at::kDouble).square().sum().cpu();
  return sum;
}

void clip(std::vector<at::Tensor>& grads, double total, double max_norm) {
  if (!std::isfinite(total)) return;
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0) {
    for (at::Tensor& g : grads) g.mul_(coef);
  }
}

// reduce_and_clip_gradients under tensor parallelism (TensorGroups says which group sums what).
core::Result<double> reduce_tensor_parallel(const NamedTensors& params, Communicator& world,
                                            std::int64_t bucket_bytes, double max_norm,
                                            const TensorGroups& g) {
  // Slices and replicated parameters with whole gradients: over the replicas of this rank's
  // slices. Replicated parameters of sequence rows: over the world. Experts: over EDP.
  std::vector<at::Tensor> sliced, whole, rows, experts;
  for (const auto& [name, p] : params) {
    at::Tensor& p_ref = const_cast<at::Tensor&>(p);
    if (!p_ref.grad().defined()) p_ref.mutable_grad() = at::zeros_like(p_ref);
    at::Tensor grad = p_ref.grad();
    const Placement* where = g.plan->find(name);
    if (where != nullptr && where->expert >= 0) {
      experts.push_back(grad);
    } else if (where != nullptr && where->sliced()) {
      sliced.push_back(grad);
    } else if (g.sequence_parallel && where != nullptr && where->sequence_partial) {
      rows.push_back(grad);
    } else {
      whole.push_back(grad);
    }
  }
  std::vector<at::Tensor> by_dp = sliced;
  by_dp.insert(by_dp.end(), whole.begin(), whole.end());
  GRPO_TRY_STATUS(reduce_buckets(by_dp, g.dp, bucket_bytes, g.replicas));
  if (!rows.empty()) {
    GRPO_TRY_STATUS(
        reduce_buckets(rows, g.rows != nullptr ? g.rows : &world, bucket_bytes, g.replicas));
  }
  if (!experts.empty()) GRPO_TRY_STATUS(reduce_buckets(experts, g.edp, bucket_bytes, g.replicas));
  // Replicated parameters count once; each slice lives on one rank of the TP group, each expert
  // on one rank of the EP group (its slices, with expert_tp, on the TP group of that rank).
  at::Tensor sq_ep = squared_norm(experts);
  if (g.ep != nullptr) GRPO_TRY_STATUS(g.ep->allreduce_sum(sq_ep));
  at::Tensor sq_tp = squared_norm(sliced);
  at::Tensor sq = squared_norm(whole) + squared_norm(rows);
  if (g.expert_tp) {
    sq_tp = sq_tp + sq_ep;
  } else {
    sq = sq + sq_ep;
  }
  if (g.tp != nullptr) GRPO_TRY_STATUS(g.tp->allreduce_sum(sq_tp));
  sq = sq + sq_tp;
  if (g.pp != nullptr) GRPO_TRY_STATUS(g.pp->allreduce_sum(sq));
  const double total = std::sqrt(sq.item<double>());
  for (auto* set : {&sliced, &whole, &rows, &experts}) clip(*set, total, max_norm);
  return total;
}

}  // namespace

core::Result<double> reduce_and_clip_gradients(const NamedTensors& params, Communicator& comm,
                                               std::int64_t bucket_bytes, double max_norm,
                                               const ExpertGroups* experts,
                                               const TensorGroups* tensors) {
  torch::NoGradGuard no_grad;
  if (tensors != nullptr) {
    return reduce_tensor_parallel(params, comm, bucket_bytes, max_norm, *tensors);
  }
  std::vector<at::Tensor> grads, shard;
  for (const auto& [name, p] : params) {
    at::Tensor& p_ref = const_cast<at::Tensor&>(p);
    if (!p_ref.grad().defined()) p_ref.mutable_grad() = at::zeros_like(p_ref);
    const bool sharded = experts != nullptr && expert_index(name) >= 0;
    (sharded ? shard : grads).push_back(p_ref.grad());
  }
  const int world = comm.world_size();
  if (world > 1) {
    GRPO_TRY_STATUS(reduce_buckets(grads, &comm, bucket_bytes, world));
    if (!shard.empty()) GRPO_TRY_STATUS(reduce_buckets(shard, experts->edp, bucket_bytes, world));
  }
  double total = 0;
  if (experts == nullptr) {
    std::vector<at::Tensor> norms;
    for (const at::Tensor& g : grads) norms.push_back(g.norm(2).to(at::kDouble));
    total = at::stack(norms).norm(2).item<double>();
  } else {
    // Replicated parameters count once; each expert lives on exactly one rank of the EP group.
    at::Tensor sq = squared_norm(shard);
    if (experts->ep != nullptr) GRPO_TRY_STATUS(experts->ep->allreduce_sum(sq));
    total = std::sqrt((squared_norm(grads) + sq).item<double>());
  }
  if (std::isfinite(total)) {
    const double coef = max_norm / (total + 1e-6);
    if (coef < 1.0) {
      for (at::Tensor& g : grads) g.mul_(coef);
      for (at::Tensor& g : shard) g.mul_(coef);
    }
  }
  return total;
}

}  // namespace grpo::trainer
