#include "grpo/trainer/version.h"

namespace grpo::trainer {

std::string_view version() {
  return GRPO_VERSION;
}

}  // namespace grpo::trainer
