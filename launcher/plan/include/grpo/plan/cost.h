// A step-time model used to rank fitting layouts: compute at the device's peak times an
// achievable fraction, TP / EP / DP / PP traffic over intra- vs inter-node bandwidth, the
// pipeline bubble, offload transfers, and a memory-bound decode for the rollout.
// docs/cost-model.md writes down every term. It ranks layouts; it does not promise seconds.
#pragma once

#include "grpo/core/cluster_profile.h"
#include "grpo/core/model_spec.h"
#include "grpo/core/workload.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/memory.h"

namespace grpo::core {

// Bytes one rank hands to each kind of communication per GRPO step (the payload: the tensors
// passed, not the wire traffic of the algorithm; the times below are computed from them).
struct CommBytes {
  double tp = 0;  // tensor-parallel collectives on activations
  double ep = 0;  // expert dispatch + combine
  double dp = 0;  // gradient reduction (+ parameter gather with the distributed optimizer)
  double pp = 0;  // pipeline sends (activations forward, gradients backward)
};

struct CostEstimate {
  double rollout_s = 0;    // generation (prefill + memory-bound decode)
  double logprob_s = 0;    // old-policy and reference log-prob forwards
  double compute_s = 0;    // training forward + backward (+ recompute)
  double bubble_s = 0;     // pipeline bubble over log-prob and training passes
  double tp_comm_s = 0;    // tensor-parallel collectives (exposed)
  double ep_comm_s = 0;    // expert-parallel all-to-all (exposed)
  double dp_comm_s = 0;    // gradient reduce / parameter gather (exposed part)
  double pp_comm_s = 0;    // pipeline point-to-point
  double offload_s = 0;    // host <-> device transfers and CPU optimizer steps
  double step_s = 0;       // the sum
  double model_tflop = 0;  // useful model FLOPs per step (training + log-probs + rollout)
  double mfu = 0;          // model_tflop / (step_s * world * peak)
  CommBytes bytes;         // what the comm times move
};

// Generation time of one step at the engine's rollout TP (independent of the actor layout).
double estimate_rollout_seconds(const ModelSpec& model, const ClusterProfile& cluster,
                                const WorkloadSpec& workload, const RolloutMemory& engine);

CostEstimate estimate_cost(const ModelSpec& model, const ClusterProfile& cluster,
                           const WorkloadSpec& workload, const Layout& layout,
                           const MemoryEstimate& memory);

}  // namespace grpo::core
