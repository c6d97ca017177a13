// grpo-trainer's version (the project version).
#pragma once

#include <string_view>

namespace grpo::trainer {

std::string_view version();

}  // namespace grpo::trainer
