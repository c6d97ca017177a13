// `grpo-launch plan --emit verl`: a plan as a verl launch script (bash running
// `python3 -m verl.trainer.main_ppo key=value ...`), docs/verl-emit.md. Every size, batch,
// offload, recompute and dtype setting of the plan goes under verl's own Hydra key for the plan's
// backend (Megatron, or FSDP when the layout is FSDP), with the rollout engine's settings, the
// cluster shape and the plan's environment; `grpo-launch check` of the script reads back the
// same layout (tests/unit/verl_script_test.cpp). Pure.
#pragma once

#include <string>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/plan/planner.h"

namespace grpo::core {

// One Hydra override of the emitted command.
struct VerlOverride {
  std::string prefix;  // "" (a key of verl's YAML) or "++" (inside an override_* mapping)
  std::string key;     // verl's dotted key
  std::string value;   // as verl reads it ("True", "8", "0.6", "bfloat16")
  std::string word() const { return prefix + key + "=" + value; }
};

// The overrides for `plan`'s best layout and workload, in the order they are written (data,
// model, actor, reference, rollout, trainer). The model path and data files are not among them:
// the script passes them from variables the user edits.
std::vector<VerlOverride> verl_overrides(const Plan& plan);

// The environment the script exports: the plan's job-wide variables (env_contract.h) without the
// GRPO_* ones, which only grpo-launch's own trainers read (verl reads its layout from the
// overrides).
std::vector<std::pair<std::string, std::string>> verl_environment(const Plan& plan);

// The model path the script defaults to: the spec's Hugging Face id, else its name.
std::string verl_default_model_path(const ModelSpec& model);

struct VerlScriptOptions {
  std::string version;  // grpo-launch's version, for the header
  std::string command;  // how the plan was asked for ("grpo-launch plan --profile ..."), or empty
};

// The whole script. Errors (kInvalidValue): an infeasible plan, a CPU profile (verl runs on GPUs
// and NPUs only), an environment variable name that is not a shell name, a NUL byte in a value.
Result<std::string> render_verl_script(const Plan& plan, const VerlScriptOptions& options = {});

}  // namespace grpo::core
