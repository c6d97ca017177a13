// What the differentiable collectives (expert_parallel.cpp, tensor_parallel.cpp) keep between
// their forward and backward (internal to grpo_trainer): the group they run on, stored in the
// autograd context (the Communicator outlives every graph built with it).
#pragma once

#include <cstdint>
#include <string>

#include "grpo/core/result.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/expert_parallel.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

inline void store_group(torch::autograd::AutogradContext* ctx, Communicator& group) {
  ctx->saved_data["group"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(&group));
}

inline Communicator& stored_group(torch::autograd::AutogradContext* ctx) {
  return *reinterpret_cast<Communicator*>(
      static_cast<std::intptr_t>(ctx->saved_data["group"].toInt()));
}

// Throws CollectiveError("<what> <message>") when `st` failed.
inline void check_collective(const core::Status& st, const char* what) {
  if (!st.ok()) throw CollectiveError(std::string(what) + " " + st.error().message);
}

}  // namespace grpo::trainer
