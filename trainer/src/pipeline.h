// Pipeline parallelism's schedule (internal to grpo_trainer): Megatron-Core's 1F1B without
// interleaving (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_without_interleaving). Each stage runs `stages - stage - 1` warm-up
// forwards, then alternates one forward and one backward, then runs the backwards left. The
// activation between stages travels forward and its gradient back by point-to-point transfers on
// the pipeline group, posted in pairs (Communicator::exchange) so no order can deadlock. At most
// `stages - stage` micro batches are in flight on a stage: that is what bounds its activations.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

// One micro batch's forward on this stage.
struct StageForward {
  at::Tensor output;  // what the next stage receives (undefined on the last stage)
  // The scalar this stage back-propagates from besides the gradient it receives: the loss on the
  // last stage, a term of the stage's own elsewhere (the MoE aux loss); undefined: none.
  at::Tensor loss;
};

struct PipelineSchedule {
  Communicator* group = nullptr;  // the pipeline (its rank is the stage); null: one stage
  int stage = 0;
  int stages = 1;
  at::TensorOptions activation;  // dtype and device of the activations between stages
  // The shape of micro batch i's activation between stages (every stage computes it from the
  // same data).
  std::function<std::vector<std::int64_t>(std::int64_t)> shape;
  // Micro batch i's forward; `input` is what the previous stage sent (a leaf that requires grad;
  // undefined on the first stage).
  std::function<StageForward(std::int64_t, const at::Tensor&)> forward;
};

// Forward and backward of `micro_batches` micro batches in 1F1B order (with one stage: forward
// and backward of each in turn). Gradients accumulate in the parameters. Errors: the
// communicator's.
core::Status run_1f1b(const PipelineSchedule& s, std::int64_t micro_batches);

}  // namespace grpo::trainer
