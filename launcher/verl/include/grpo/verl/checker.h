// `grpo-launch check`: reads a verl launch script (shell_script.h), maps its Hydra overrides
// onto the planner's model (model spec, cluster, layout, workload), and reports diagnostics at
// the file:line of the override they concern: parallel legality (the planner's rules), data
// types, memory (the planner's estimate), unknown keys (config_schema.h), unresolved values and
// environment settings. Pure; docs/check.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grpo/core/catalog.h"
#include "grpo/core/config_schema.h"
#include "grpo/core/diagnostic.h"
#include "grpo/core/engine_versions.h"
#include "grpo/core/workload.h"
#include "grpo/plan/layout.h"
#include "grpo/plan/memory.h"
#include "grpo/shell/shell_script.h"

namespace grpo::core {

struct CheckOptions {
  bool parallel = true;        // --check-parallel
  bool memory = true;          // --check-memory
  bool data_types = true;      // --check-data-types
  std::string profile;         // hardware profile; empty: kDefaultCheckProfile
  std::string model;           // model spec; empty: from actor_rollout_ref.model.path
  std::vector<Override> sets;  // --set overrides of the hardware profile
  EngineVersions engines;      // --engines: whose rules apply (docs/parallelism.md)
};

inline constexpr const char* kDefaultCheckProfile = "a100x8";

// One verl command found in a script, and what the checker made of it.
struct CheckedRun {
  std::string file;         // the file the command is written in (the script or one it sources)
  std::uint32_t line = 0;   // where the command starts
  std::string entry_point;  // "verl.trainer.main_ppo"
  std::string strategy;     // "megatron" or "fsdp"
  std::string model;        // the model spec used ("" when unknown)
  std::string profile;      // the hardware profile used
  EngineVersions engines;   // the engine versions whose rules were applied
  bool profile_is_default = false;
  int nodes = 0;
  int gpus_per_node = 0;
  Layout layout;
  WorkloadSpec workload;  // batch sizes and settings as read (verl's defaults where absent)
  std::optional<MemoryEstimate> memory;
  std::size_t overrides = 0;  // how many Hydra overrides were read
  bool passes_args = false;   // the command forwards "$@"
  // Undecidable tests and loops around the command (it may not run, or run more than once).
  std::vector<std::string> conditions;
  std::vector<Diagnostic> diagnostics;  // sorted by line, then code
};

struct CheckReport {
  std::string file;
  std::vector<CheckedRun> runs;
  std::vector<std::string> notes;  // what the script reader did not follow (ParsedScript::notes)
  std::size_t errors() const;
  std::size_t warnings() const;
};

// Errors: kParse when the script holds no verl entry point; kNotFound / kParse for an unknown
// or broken --profile / --model (they come from the provider).
Result<CheckReport> check_script(const ParsedScript& script, const ConfigSchema& schema,
                                 const SourceProvider& provider, const CheckOptions& options);

// Which of the three check groups a code belongs to ("parallel", "memory", "data-types"), or
// "always" for the key, value and environment checks.
std::string_view check_group(DiagCode code);

}  // namespace grpo::core
