// An in-memory environment for Bootstrap::create(env) and world_from_env().
#pragma once

#include <map>
#include <optional>
#include <string>

#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap::testing {

using Vars = std::map<std::string, std::string>;

inline EnvReader reader(const Vars& vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// A valid 2-node x 4-rank world seen from global rank 5 (node 1, local rank 1).
inline Vars valid_vars() {
  return {{"RANK", "5"},
          {"WORLD_SIZE", "8"},
          {"LOCAL_RANK", "1"},
          {"LOCAL_WORLD_SIZE", "4"},
          {"MASTER_ADDR", "n1.example"},
          {"MASTER_PORT", "29500"}};
}

}  // namespace grpo::bootstrap::testing
