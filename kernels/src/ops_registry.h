// The program-wide instance of each backend, for ops_for(). Internal to kernels/.
#pragma once

#include "grpo/kernels/ops.h"

namespace grpo::kernels {

const Ops& reference_ops_default();
const Ops& fused_ops_default();  // make_fused_ops() with the default FusedOptions

}  // namespace grpo::kernels
