// Diagnostics: findings about a configuration, each with a stable UPPER_SNAKE code documented
// once in docs/diagnostics.md (a test keeps the two in step), a severity, the offending setting,
// a message and a fix hint.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core {

enum class DiagCode {
  kTpMismatch,           // reference TP / PP differ from the actor's (warning: verl ignores them)
  kWorldSizeMismatch,    // world size not divisible by the model-parallel size
  kHeadsNotDivisible,    // attention heads not divisible by TP (or rollout TP)
  kKvHeadsNotDivisible,  // KV heads not divisible by TP (or rollout TP not a multiple of them)
  kLayersNotDivisible,   // layers cannot be split into PP stages as configured
  kExpertsNotDivisible,  // experts not divisible by EP, or EP x ETP does not divide the world
  kTpCrossesNode,        // a TP or ETP group would span nodes; a rollout replica straddles nodes
  kGroupSplit,           // verl's prefix grouper needs the prompts to divide over DP ranks
  kBatchNotDivisible,    // batch sizes do not divide into mini / micro batches
  kDtypeConflict,        // contradictory or unsupported precision settings
  kOomRisk,              // the estimate exceeds device memory in some phase
  kKvCacheShort,         // the rollout KV cache cannot hold all concurrent sequences
  kEnvConflict,          // an environment setting contradicts the plan or another setting
  kEnvUnknown,           // an NCCL_* / HCCL_* variable the library does not document
  kNoFeasiblePlan,       // nothing in the search space is legal and fits
  kInvalidSetting,       // a setting out of range or meaningless for this model
  kUnknownKey,           // an override key the verl / Megatron schema does not have
  kUnresolved,           // a value the script reader could not resolve (shell expansion)
  kUnevenPipeline,       // informational: the plan sets first/last pipeline-stage layer counts
};

enum class Severity { kError, kWarning, kInfo };

struct DiagCodeInfo {
  DiagCode code;
  std::string_view name;  // "TP_MISMATCH"
  Severity default_severity;
  std::string_view summary;  // one line, as in docs/diagnostics.md
};

// Every code, in declaration order.
const std::vector<DiagCodeInfo>& all_diag_codes();
std::string_view to_string(DiagCode code);
std::string_view to_string(Severity severity);
const DiagCodeInfo& info(DiagCode code);

struct Diagnostic {
  DiagCode code = DiagCode::kInvalidSetting;
  Severity severity = Severity::kError;
  std::string setting;   // the offending setting ("tp", "actor_rollout_ref.rollout.n", ...)
  std::string message;   // what is wrong, with the numbers
  std::string hint;      // how to fix it
  SourceLocation where;  // file:line of the setting when it came from a file

  // "where: ERROR TP_MISMATCH: message (fix: hint)" on one line.
  std::string str() const;
};

Diagnostic make_diag(DiagCode code, std::string setting, std::string message, std::string hint,
                     SourceLocation where = {});

bool has_errors(const std::vector<Diagnostic>& diags);

}  // namespace grpo::core
