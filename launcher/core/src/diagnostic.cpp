#include "grpo/core/diagnostic.h"

namespace grpo::core {

const std::vector<DiagCodeInfo>& all_diag_codes() {
  using S = Severity;
  static const std::vector<DiagCodeInfo> codes = {
      {DiagCode::kTpMismatch, "TP_MISMATCH", S::kWarning,
       "the reference's TP or PP differs from the actor's; verl runs the reference in the "
       "actor's parallel state"},
      {DiagCode::kWorldSizeMismatch, "WORLD_SIZE_MISMATCH", S::kError,
       "the world size is not a multiple of TP x PP x CP, or differs from nodes x GPUs per node"},
      {DiagCode::kHeadsNotDivisible, "HEADS_NOT_DIVISIBLE", S::kError,
       "attention heads are not divisible by the (rollout) tensor-parallel size"},
      {DiagCode::kKvHeadsNotDivisible, "KV_HEADS_NOT_DIVISIBLE", S::kError,
       "KV heads are not divisible by TP, or rollout TP is neither a divisor nor a multiple of "
       "them"},
      {DiagCode::kLayersNotDivisible, "LAYERS_NOT_DIVISIBLE", S::kError,
       "the layers cannot be split into the pipeline stages as configured"},
      {DiagCode::kExpertsNotDivisible, "EXPERTS_NOT_DIVISIBLE", S::kError,
       "experts are not divisible by EP, or EP x ETP x PP does not divide the world size"},
      {DiagCode::kTpCrossesNode, "TP_CROSSES_NODE", S::kError,
       "a TP or ETP group would span nodes, or a rollout replica would straddle nodes"},
      {DiagCode::kGroupSplit, "GROUP_SPLIT", S::kError,
       "verl's prefix grouper (use_prefix_grouper with balance_batch) needs the prompts to divide "
       "over the data-parallel ranks"},
      {DiagCode::kBatchNotDivisible, "BATCH_NOT_DIVISIBLE", S::kError,
       "batch sizes do not divide into mini batches, ranks and micro batches"},
      {DiagCode::kDtypeConflict, "DTYPE_CONFLICT", S::kError,
       "precision settings contradict each other or the hardware"},
      {DiagCode::kOomRisk, "OOM_RISK", S::kError,
       "the memory estimate exceeds device memory in some phase"},
      {DiagCode::kKvCacheShort, "KV_CACHE_SHORT", S::kWarning,
       "the rollout KV cache cannot hold every concurrent sequence (vLLM will preempt)"},
      {DiagCode::kEnvConflict, "ENV_CONFLICT", S::kError,
       "an environment setting contradicts the plan or another setting (some only a note)"},
      {DiagCode::kEnvUnknown, "ENV_UNKNOWN", S::kWarning,
       "an NCCL_* / HCCL_* variable that the library does not document"},
      {DiagCode::kNoFeasiblePlan, "NO_FEASIBLE_PLAN", S::kError,
       "no layout in the search space is legal and fits in memory"},
      {DiagCode::kInvalidSetting, "INVALID_SETTING", S::kError,
       "a setting is out of range or meaningless for this model or cluster"},
      {DiagCode::kUnknownKey, "UNKNOWN_KEY", S::kError,
       "an override key that verl's configuration or Megatron-Core's TransformerConfig lacks"},
      {DiagCode::kUnresolved, "UNRESOLVED", S::kWarning,
       "a value in the script could not be resolved statically (shell expansion)"},
      {DiagCode::kUnevenPipeline, "UNEVEN_PIPELINE", S::kInfo,
       "the layers do not divide evenly: the plan sets the first/last pipeline-stage layer counts"},
  };
  return codes;
}

const DiagCodeInfo& info(DiagCode code) {
  return all_diag_codes().at(static_cast<std::size_t>(code));
}

std::string_view to_string(DiagCode code) {
  return info(code).name;
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "error";
}

std::string Diagnostic::str() const {
  std::string out;
  if (where.known()) out += where.str() + ": ";
  out += std::string(to_string(severity)) + " " + std::string(to_string(code)) + ": " + message;
  if (!hint.empty()) out += " (fix: " + hint + ")";
  return out;
}

Diagnostic make_diag(DiagCode code, std::string setting, std::string message, std::string hint,
                     SourceLocation where) {
  return Diagnostic{code,
                    info(code).default_severity,
                    std::move(setting),
                    std::move(message),
                    std::move(hint),
                    std::move(where)};
}

bool has_errors(const std::vector<Diagnostic>& diags) {
  for (const auto& d : diags) {
    if (d.severity == Severity::kError) return true;
  }
  return false;
}

}  // namespace grpo::core
