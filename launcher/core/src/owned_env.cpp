#include "grpo/core/owned_env.h"

#include <set>

namespace grpo::core {

bool is_launcher_owned_env(std::string_view name) {
  static const std::set<std::string_view> kOwned = {"GRPO_TP",
                                                    "GRPO_PP",
                                                    "GRPO_CP",
                                                    "GRPO_DP",
                                                    "GRPO_EP",
                                                    "GRPO_ETP",
                                                    "GRPO_SEQUENCE_PARALLEL",
                                                    "GRPO_ROLLOUT_TP",
                                                    "GRPO_FIRST_STAGE_LAYERS",
                                                    "GRPO_LAST_STAGE_LAYERS",
                                                    "GRPO_PLAN_FILE",
                                                    "GRPO_RUN_DIR",
                                                    "GRPO_RUN_ID",
                                                    "GRPO_ATTEMPT",
                                                    "GRPO_VERL_NODES",
                                                    "GRPO_VERL_END_TIME",
                                                    "GRPO_RAY_START_TIMEOUT",
                                                    "GRPO_FAULT",
                                                    "GRPO_PROFILE_DIR",
                                                    "GRPO_LAUNCH_PROFILE_PATH",
                                                    "GRPO_STANDBY"};
  return kOwned.count(name) > 0 || name.rfind("GRPO_MTBF_", 0) == 0;
}

}  // namespace grpo::core
