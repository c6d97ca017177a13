// The pieces of a GRPO update that are not the model: group-normalized advantages, the batch
// layout shared by SFT and GRPO, AdamW, and the bucketed gradient all-reduce with norm clipping.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/model.h"
#include "grpo/trainer/sharding_plan.h"
#include "grpo/trainer/tensor_io.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

// rewards [B] with B = groups * n, rows of a group adjacent. (r - mean) / (std + eps) within each
// group (unbiased std, as torch.std); without norm_by_std just r - mean. A group of one gets
// advantage 0, as verl.
at::Tensor group_advantages(const at::Tensor& rewards, std::int64_t n, bool norm_by_std,
                            double eps = 1e-6);

// Prompt (left-padded) followed by response (right-padded): the layout of every training
// forward. Response token t sits at slot P + t and is predicted from slot P + t - 1.
struct SequenceBatch {
  at::Tensor tokens;          // [B, P + R] int64
  at::Tensor valid;           // [B, P + R] bool
  at::Tensor positions;       // [B, P + R] int64
  at::Tensor response;        // [B, R] int64
  at::Tensor response_valid;  // [B, R] bool
  std::int64_t prompt_len = 0;

  std::int64_t rows() const { return tokens.size(0); }
  SequenceBatch slice(std::int64_t begin, std::int64_t end) const;
};
SequenceBatch make_sequence_batch(const at::Tensor& prompt, const at::Tensor& prompt_valid,
                                  const at::Tensor& response, const at::Tensor& response_valid);

struct ResponseStates {
  at::Tensor hidden;    // [N, H]: the states that predict the N valid response tokens
  at::Tensor tokens;    // [N] int64
  at::Tensor aux_loss;  // scalar (MoE load-balancing loss of this forward)
  at::Tensor index;     // [N] int64: flat index into [B, R] of each valid token
};
ResponseStates response_states(QwenModel& model, const SequenceBatch& batch);
// The same from a forward's output (the last pipeline stage's).
ResponseStates response_states(const ModelOutput& out, const SequenceBatch& batch);

// Per-token log-probs [B, R] (0 at invalid slots) under `model`, in micro batches, no grad.
// `after_micro` (if set) is called with the rows done after every micro batch: the caller's
// heartbeat, so a long old/ref log-prob pass is not one silent computation.
at::Tensor sequence_logprobs(QwenModel& model, const SequenceBatch& batch, std::int64_t micro_rows,
                             double temperature,
                             const std::function<void(std::int64_t)>& after_micro = {});

struct AdamWOptions {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

// torch.optim.AdamW's update (decoupled weight decay, bias correction), one tensor at a time.
// A parameter without a gradient is treated as having a zero gradient.
//
// Mixed precision (Megatron-Core's Float16OptimizerWithFloat16Params with grad_reduce_in_fp32):
// given fp32 `masters` for low-precision (bf16) `params`, the optimizer updates the masters and
// copies them, rounded, into the parameters after each step. Every parameter then has an fp32
// main gradient from the start: autograd adds each backward's bf16 gradient into it, so
// accumulation over micro batches and the gradient reduction run in fp32.
class AdamW {
 public:
  explicit AdamW(NamedTensors params, std::vector<at::Tensor> masters = {});
  void step(const AdamWOptions& options);
  void zero_grad();
  void reset();  // forget the moments and the step count
  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t steps) { steps_ = steps; }
  // "exp_avg.<name>" and "exp_avg_sq.<name>" for every parameter; the tensors alias the
  // optimizer's own (copying into them restores a checkpoint).
  NamedTensors state() const;
  core::Status load_state(const NamedTensors& state, std::int64_t steps);
  const NamedTensors& params() const { return params_; }
  // The fp32 weights of the parameters: the masters under mixed precision, else the parameters.
  // They alias the optimizer's own; after copying into them call sync_params().
  NamedTensors weights() const;
  // Copies the masters, rounded, into the parameters (nothing without masters).
  void sync_params();
  bool mixed_precision() const { return !masters_.empty(); }
  // Bytes of the fp32 master weights (0 without them).
  std::int64_t master_bytes() const;

 private:
  NamedTensors params_;
  std::vector<at::Tensor> masters_;  // fp32, one per parameter; empty: fp32 training
  std::vector<at::Tensor> exp_avg_;
  std::vector<at::Tensor> exp_avg_sq_;
  std::int64_t steps_ = 0;
};

// Under expert parallelism: the groups that hold the other experts (ep) and the replicas of
// this rank's experts (edp; null when there is none).
struct ExpertGroups {
  Communicator* ep = nullptr;
  Communicator* edp = nullptr;
};

// Under tensor parallelism: the ranks holding the same slices (dp, null when there are none:
// the gradients of this rank's parameters are summed over it instead of the world and divided by
// `replicas`), the TP group (the sliced parameters' squares are summed over it in the norm) and
// the run's sharding plan, which says which parameters are sliced (the others are replicated with
// identical gradients). Under sequence parallelism (`sequence_parallel`) the replicated parameters
// the plan marks sequence_partial saw only this rank's rows: they are summed over the stage's
// ranks (TP x DP: `rows`, or the whole world when null), divided by `replicas`.
// With an MoE model the experts (whole on each rank, or with `expert_tp` this rank's TP slices)
// are summed over `edp` (the ranks holding the same experts or slices, null when none) and
// divided by `replicas`; their squares are summed over `ep` (null without EP: every rank then
// holds every expert), and with `expert_tp` over `tp` too, in the norm. Under pipeline
// parallelism (also without TP) the parameters are this rank's stage's and the squares are
// summed over the pipeline `pp` too.
struct TensorGroups {
  Communicator* dp = nullptr;
  Communicator* tp = nullptr;
  int replicas = 1;
  const ShardingPlan* plan = nullptr;  // not null
  bool sequence_parallel = false;
  Communicator* edp = nullptr;
  Communicator* ep = nullptr;
  bool expert_tp = false;
  Communicator* pp = nullptr;
  Communicator* rows = nullptr;  // the ranks of this pipeline stage; null: the world
};

// Flattens `tensors` in order into buckets of about bucket_bytes (a larger tensor alone), calls
// `f` on each bucket and copies the bucket back into its tensors (a collective on the bucket:
// one call instead of one per tensor). Stops at f's first error.
core::Status in_buckets(const std::vector<at::Tensor>& tensors, std::int64_t bucket_bytes,
                        const std::function<core::Status(at::Tensor&)>& f);

// Averages every parameter's gradient over the ranks (flattened into buckets of about
// bucket_bytes), then clips the global norm to max_norm. Returns the norm before clipping.
// Undefined gradients become zeros first. With `experts`, the expert parameters (this rank's
// shard) are summed over experts->edp instead, divided by the world size like the others (each
// already holds the gradient of every rank of its EP group), and their squares summed over
// experts->ep in the norm. With `tensors` (`experts` is then ignored), see TensorGroups. Errors:
// the communicator's.
core::Result<double> reduce_and_clip_gradients(const NamedTensors& params, Communicator& comm,
                                               std::int64_t bucket_bytes, double max_norm,
                                               const ExpertGroups* experts = nullptr,
                                               const TensorGroups* tensors = nullptr);

}  // namespace grpo::trainer
