// The unsharded model seen from a sharded rank (internal to grpo_trainer): the parameter names and
// shapes of the one-rank model in its order, which rank holds each, and the collectives that move
// tensors between the shards and one full copy. Checkpoints are written and read in this full
// form, so any layout loads any other layout's checkpoint (docs/checkpoint-format.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/trainer/tensor_parallel.h"
#include "run_context.h"

namespace grpo::trainer {

struct FullTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  // The global rank that holds it: rank 0's pipeline member of the stage that trains it (an
  // expert's: a rank of that member's EP group).
  int owner = 0;
  // Split over TP (tp_slice): the ranks of the owner's TP group each hold a slice.
  bool sliced = false;
  int stage = 0;  // the pipeline stage that trains it (ParallelState::stage_of)
};

// `model`'s unsharded parameters, in the one-rank model's order: listed from a meta-device copy
// of the whole model on the first call of a run, kept in ctx.full_params_cache after it (every
// model of a run, the reference and the rollout copy too, has the layout's sharding).
const std::vector<FullTensor>& full_params(const RunContext& ctx, const QwenModel& model);
// AdamW's states of those parameters in AdamW::state()'s order: every exp_avg, then every
// exp_avg_sq.
std::vector<FullTensor> full_optimizer_states(const std::vector<FullTensor>& params);

// Collective over the world: every entry's tensor travels from its owner (whose `local` holds it
// under the same name) to rank 0, or to every rank when `to_all`; `sink` sees it there, in order,
// as fp32 (bf16 tensors travel and arrive widened).
core::Status gather_full(RunContext& ctx, const std::vector<FullTensor>& full,
                         const NamedTensors& local, bool to_all,
                         const std::function<void(const FullTensor&, const at::Tensor&)>& sink);

// Collective over the world: every entry travels from `from(entry)` (a rank whose `source` holds
// it by name) to every rank, which copies it into its `local` tensor of that name, if it has one.
// Errors: kInvalidValue when `source` lacks an entry or its shape differs (reported by every rank).
core::Status scatter_full(RunContext& ctx, const std::vector<FullTensor>& full,
                          const std::map<std::string, at::Tensor>& source,
                          const NamedTensors& local,
                          const std::function<int(const FullTensor&)>& from);

// Not collective: this rank's part of `whole` (full tensor `f`: its TP slice when `f` is
// sliced, else all of it) copied into `local`. The one rule scatter_full and copy_own_parts
// share for which part a rank keeps.
void keep_part(const RunContext& ctx, const FullTensor& f, const at::Tensor& whole,
               at::Tensor& local);

// The slice of `f` this rank holds (nullopt: all of it, or f is not split).
std::optional<TpSlice> own_slice(const RunContext& ctx, const FullTensor& f);

// Not collective: every rank takes its part (keep_part) of every `full` entry it holds in
// `local` from its own `source` (the full tensors, as this rank read them from a checkpoint).
// Errors: kInvalidValue when `source` lacks an entry or its shape differs; every entry is checked
// on every rank, so ranks reading the same files fail alike.
core::Status copy_own_parts(const RunContext& ctx, const std::vector<FullTensor>& full,
                            const std::map<std::string, at::Tensor>& source,
                            const NamedTensors& local);

// sha256 of the full weights (model_weights: the fp32 masters under mixed precision) in the
// one-rank order (tensor_io.h), the same whatever the layout. Collective when the model is
// sharded.
core::Result<std::string> full_weights_sha256(RunContext& ctx, const TrainState& st);

}  // namespace grpo::trainer
