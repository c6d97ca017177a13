#include "grpo/trainer/version.h"

namespace grpo::trainer {

std::string_view version() {
  return GRPO_VERSION;
}

std::string_view comm_backends() {
#if defined(USE_C10D_NCCL)
  return "gloo, nccl";
#else
  return "gloo";
#endif
}

}  // namespace grpo::trainer
