// The environment variables that belong to grpo-launch: a profile cannot set them. Here, below
// the plan, because the catalog refuses them while it reads a profile's [env] (catalog.cpp).
#pragma once

#include <string_view>

namespace grpo::core {

// Whether `name` is one of grpo-launch's own variables: the layout it exports to the job
// (GRPO_TP, ...), the run's files (GRPO_RUN_DIR, ...), what the supervisor hands its scripts
// (GRPO_ATTEMPT, GRPO_VERL_*, GRPO_MTBF_*) and what its programs read (GRPO_FAULT,
// GRPO_PROFILE_DIR, GRPO_LAUNCH_PROFILE_PATH). A profile's [env] cannot set one: it would change
// what the launcher does, not what the job sees (docs/security.md).
bool is_launcher_owned_env(std::string_view name);

}  // namespace grpo::core
