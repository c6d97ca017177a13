// The unsharded model seen from a sharded rank (internal to grpo_trainer): the run's sharding plan
// (which rank holds each parameter of the one-rank model, in its order) and the collectives that
// move tensors between the shards and one full copy. Checkpoints are written and read in this full
// form, so any layout loads any other layout's checkpoint (docs/checkpoint-format.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/trainer/sharding_plan.h"
#include "run_context.h"

namespace grpo::trainer {

// The run's sharding plan (sharding_plan.h) for `model`'s layout: made from a meta-device copy of
// the whole model and ctx.par on the first call of a run, kept in ctx.plan_cache after it (every
// model of a run, the reference and the rollout copy too, has the layout's sharding).
const ShardingPlan& sharding_plan(const RunContext& ctx, const QwenModel& model);

// Collective over the world: every entry's tensor travels from its owner (whose `local` holds it
// under the same name) to rank 0, or to every rank when `to_all`; `sink` sees it there, in order,
// as fp32 (bf16 tensors travel and arrive widened).
core::Status gather_full(RunContext& ctx, const std::vector<Placement>& full,
                         const NamedTensors& local, bool to_all,
                         const std::function<void(const Placement&, const at::Tensor&)>& sink);

// Collective over the world: every entry travels from `from(entry)` (a rank whose `source` holds
// it by name) to every rank, which copies it into its `local` tensor of that name, if it has one.
// Errors: kInvalidValue when `source` lacks an entry or its shape differs (reported by every rank).
core::Status scatter_full(RunContext& ctx, const std::vector<Placement>& full,
                          const std::map<std::string, at::Tensor>& source,
                          const NamedTensors& local,
                          const std::function<int(const Placement&)>& from);

// Not collective: this rank's part of `whole` (its own TP slice of `f` when `f` is sliced, else
// all of it) copied into `local`. The one rule scatter_full and copy_own_parts share for which
// part a rank keeps.
void keep_part(const Placement& f, const at::Tensor& whole, at::Tensor& local);

// Not collective: every rank takes its part (keep_part) of every `full` entry it holds in
// `local` from its own `source` (the full tensors, as this rank read them from a checkpoint).
// Errors: kInvalidValue when `source` lacks an entry or its shape differs; every entry is checked
// on every rank, so ranks reading the same files fail alike.
core::Status copy_own_parts(const std::vector<Placement>& full,
                            const std::map<std::string, at::Tensor>& source,
                            const NamedTensors& local);

// sha256 of the full weights (model_weights: the fp32 masters under mixed precision) in the
// one-rank order (tensor_io.h), the same whatever the layout. Collective when the model is
// sharded.
core::Result<std::string> full_weights_sha256(RunContext& ctx, const TrainState& st);

}  // namespace grpo::trainer
