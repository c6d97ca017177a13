// The reference kernels (plain LibTorch ops), which the trainer's torch tests compute with.
#pragma once

#include "grpo/kernels/ops.h"

namespace grpo::trainer::testing {

inline const kernels::Ops& ref_ops() {
  return kernels::ops_for(kernels::Backend::kReference);
}

}  // namespace grpo::trainer::testing
